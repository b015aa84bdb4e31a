#!/usr/bin/env bash
# Makes the TLS files of the three-node NATS cluster in deploy/nats: one CA
# and, per node, a server certificate that is also the node's client
# certificate on the routes (extended key usage serverAuth and clientAuth),
# with the node's name and every extra name or IP address given as SANs.
#
#   deploy/nats/make-certs.sh OUTDIR [NAME_OR_IP ...]
#   NODES="nats-1 nats-2 nats-3"   the node names (default), one cert each
#   DAYS=825                       server certificates' lifetime (CA: 3650)
#
# Give every other name clients use to reach the nodes (a DNS alias such
# as nats.lab.example, the nodes' IP addresses): a client checks that the
# name in its URL is in the certificate. Names go into every node's
# certificate.
#
# OUTDIR gets:
#   ca.pem, ca-key.pem      the CA (keep ca-key.pem off the NATS hosts)
#   nats-N/ca.pem, nats-N/server.pem, nats-N/server-key.pem
#                           what node nats-N needs in /etc/nats/tls/
# Run again with the same OUTDIR to reissue the node certificates from the
# same CA (clients keep their ca.pem). Needs openssl (Debian: openssl).
set -euo pipefail

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
	sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
	exit 64
fi
out=$1
shift
if ! command -v openssl >/dev/null; then
	echo "make-certs.sh: needs openssl (apt-get install openssl)" >&2
	exit 69
fi
nodes=${NODES:-nats-1 nats-2 nats-3}
days=${DAYS:-825}

umask 077
mkdir -p "$out"

if [ -s "$out/ca-key.pem" ] && [ -s "$out/ca.pem" ]; then
	echo "make-certs.sh: using the CA in $out/ca.pem"
else
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-keyout "$out/ca-key.pem" -out "$out/ca.pem" -days 3650 \
		-subj "/CN=benchfleet NATS CA" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	echo "make-certs.sh: new CA $out/ca.pem"
fi

# SANs beyond the node's own name: IP addresses as IP:, the rest as DNS:.
extra=""
for n in "$@"; do
	if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then
		extra+=",IP:$n"
	else
		extra+=",DNS:$n"
	fi
done

for node in $nodes; do
	dir="$out/$node"
	mkdir -p "$dir"
	ext="$dir/server.ext"
	cat >"$ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:$node$extra
EOF
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-keyout "$dir/server-key.pem" -out "$dir/server.csr" -subj "/CN=$node" 2>/dev/null
	openssl x509 -req -in "$dir/server.csr" -CA "$out/ca.pem" -CAkey "$out/ca-key.pem" \
		-set_serial "0x$(openssl rand -hex 16)" -days "$days" -extfile "$ext" \
		-out "$dir/server.pem" 2>/dev/null
	rm -f "$dir/server.csr" "$ext"
	cp "$out/ca.pem" "$dir/ca.pem"
	chmod 0644 "$dir/ca.pem" "$dir/server.pem"
	echo "make-certs.sh: $dir/server.pem for DNS:$node$extra"
done
chmod 0644 "$out/ca.pem"
