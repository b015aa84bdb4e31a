// Package box runs one job's untrusted subprocess (a pull request's pytest
// harness, hostile by default) in a box built by a tool made for it,
// bubblewrap: walls between the job and the worker, the host and every
// other job, a room of its own, limits, every process it starts killed
// when it ends, and the files it leaves read only through bounded, checked
// reads (ReadFile, CopyFile).
//
// # The walls
//
// With Config.Sandbox "bwrap" (the default) each job's command runs under
// bwrap --unshare-all --unshare-user --disable-userns, started as the
// job's own uid (an unprivileged user namespace maps that uid to itself):
//
//   - mount: the system directories (/usr, /etc, /bin, /lib...) read-only;
//     the checkout, its environment and the wheels (Spec.ReadOnly,
//     Config.ReadOnly) read-only; a private /tmp and /dev/shm (sized
//     tmpfs); /sys read-only with /sys/fs/cgroup masked; /proc of its own
//     pid namespace; and writable only its room's work, tmp and out. The
//     checkout files a harness reads from its working directory
//     (Spec.Files) are bound read-only into work before the job's first
//     process starts: the worker writes nothing where the job can.
//   - pid, ipc, uts, cgroup namespaces of its own: it sees and signals only
//     its own processes.
//   - network: a namespace with only its own loopback (Config.Network
//     "host" opts in to the host's).
//   - devices: a minimal /dev with only its slot's device nodes
//     (Spec.Devices).
//   - uid: under a root worker each room leases a uid of its own from
//     Config.UIDs (a flock per uid in Config.LockDir, shared by every
//     worker of the host): no two running jobs share a user. A lease whose
//     last holder died with processes left is swept (SIGKILL to every
//     process of the uid) before it is handed out.
//   - pids, memory, cpu: the room's cgroup bounds (Config.Limits), in its
//     cgroup v2 directory where the controllers are delegated, else in
//     the hybrid host's v1 hierarchies: bubblewrap reports the sandbox's
//     pid 1 on an info pipe and waits on a block pipe until both are in
//     the room's v1 cgroups, so nothing of the job runs outside them.
//   - disk: the room is a tmpfs of Limits.Disk bytes that the worker
//     mounts (unbindable: a sandbox binding a directory above the rooms
//     gets no other room). No read-only or writable path may hold the
//     rooms: New, and OpenSpec for a job's paths, refuse one.
//
// New checks each wall (Box.Walls) and, with Config.Walls "require" (the
// default), fails naming any that cannot be built; "warn" logs them. A
// wall the config takes down on purpose (network host, a limit of -1,
// sandbox none, a named user) is down by choice. Cgroup names hold no
// part of a room's name.
//
// # The room
//
// Open makes one room per job under Config.Root:
//
//	<Root>/                    0711, the worker's
//	  job-<id>-<random>/       0711, the worker's: Room.Dir
//	    .room                  0600, the worker's record (its uid, its
//	                           cgroups), locked while the worker lives
//	    j/                     0711, the room's tmpfs
//	      work/                0700, the job user's: its working directory
//	      tmp/                 0700, the job user's: its TMPDIR
//	      out/                 0700, the job user's: where it writes its report
//
// Every directory from / to Root must be searchable (x) by the job user
// (bubblewrap binds the room as that user); New checks and names the one
// that is not.
//
// # Every descendant dies with its job
//
// With a cgroup (Config.Cgroup "auto", the default, when the host allows
// it) each room has a cgroup v2 directory of its own under the worker's
// cgroup. The job's processes are started inside it atomically (clone3
// with CLONE_INTO_CGROUP), every process they fork stays in it whatever
// it does (setsid, double fork), and Close kills them all at once
// (cgroup.kill), waits until the cgroup is empty and removes it; the pid
// namespace's init dying also ends every process of the sandbox. Without
// a cgroup the worker becomes a child subreaper and Close kills every
// process of the room's uid, and every child of the worker that is the
// job's (run as its user, or carrying the room's mark, the BENCHFLEET_BOX
// variable). The job's main process also gets SIGKILL as its parent-death
// signal, and bubblewrap --die-with-parent: if the worker dies, the job
// dies too.
//
// A worker that dies with jobs running leaves their rooms: Sweep, at the
// next worker's start, kills what they still run and removes them (see
// sweep_linux.go).
//
// Config.Sandbox "none" keeps only the user, the room, the cgroup and the
// limits: no namespaces (the box's own benchmark, and hosts without
// bubblewrap under walls "warn").
//
// # Warm rooms
//
// With Config.Warm "on" (a worker's default), once a job's command has
// started the box builds the next room of the same Spec: its uid, tmpfs,
// cgroups and sandbox, around a shell that waits (at nice 19 and the
// least CPU weight) for the next job's command. OpenSpec hands it out
// while it binds the same files; Start writes the command to the shell,
// which becomes the job at the box's priority and weight. Finished rooms
// are tidied in the background, and Close removes the warm rooms and
// waits for the tidying. See warm_linux.go.
package box

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of Config.
const (
	// DefaultUser is the host's unprivileged user, which tests and the
	// uid-less checks (JobUser, Reachable) reason as; a root worker's jobs
	// run as a uid of their own each (Config.UIDs).
	DefaultUser = "nobody"
	// DefaultKillTimeout bounds how long Close waits for a job's processes
	// to die.
	DefaultKillTimeout = 10 * time.Second
	// RootDirName is the default Root's name under os.TempDir().
	RootDirName = "benchfleet-box"
)

// Values of Config.User and Config.Cgroup.
const (
	// UserNone runs jobs as the worker's own user.
	UserNone = "none"
	// CgroupAuto is a cgroup per job when the host allows it, else the
	// subreaper fallback.
	CgroupAuto = "auto"
	// CgroupOn is a cgroup per job; New fails when the host does not allow
	// it.
	CgroupOn = "on"
	// CgroupOff is the subreaper fallback, no cgroup.
	CgroupOff = "off"
)

// EnvMark is the variable Cmd sets in the job's environment to mark its
// processes as the room's (see the package doc).
const EnvMark = "BENCHFLEET_BOX"

// Config configures a Box.
type Config struct {
	// User is the user jobs run as. Default "": a uid of its own per job,
	// leased from UIDs, when the worker runs as root; the worker's own
	// user otherwise (the uid wall is down). "none" runs jobs as the
	// worker's own user deliberately (e.g. a container per job). "NAME",
	// "UID" (a user with a passwd entry) or "UID:GID" names a user; it must
	// not be root, and a worker that is not root may only name itself.
	User string
	// Root holds the rooms, one directory per job. Default
	// os.TempDir()/benchfleet-box. Created 0711 if missing; it must be the
	// worker's, writable by no one else, and searchable by the job user
	// along its whole path.
	Root string
	// Cgroup is how a job's processes are found and killed: "auto"
	// (default, also ""): a cgroup v2 directory per job when the host
	// allows it, else the subreaper fallback; "on": a cgroup or New fails;
	// "off": the subreaper fallback. See the package doc.
	Cgroup string
	// KillTimeout bounds how long Close waits for the job's processes to
	// die after SIGKILL. Default 10s.
	KillTimeout time.Duration
	// Groups are supplementary groups the job user's processes get, by
	// name or gid (e.g. "tenstorrent", where udev gives the device nodes
	// to a group with mode 0660). Default none. Only with a user switch.
	Groups []string
	// Sandbox is the tool that walls each job in: "bwrap" (default, also
	// ""): bubblewrap (Bwrap) gives every job its own mount, pid, network,
	// ipc, uts, cgroup and user namespaces (see the package doc); "none":
	// no namespaces, the job sees the host's file system, processes and
	// network (for the box's own benchmark, and hosts without bubblewrap
	// when Walls is "warn").
	Sandbox string
	// Bwrap is the bubblewrap binary, a path or a name looked up in PATH.
	// Default "bwrap" (Debian's package bubblewrap).
	Bwrap string
	// Walls is what New does when a wall (Box.Walls) cannot be built on
	// this host: "require" (default, also ""): it fails naming the wall;
	// "warn": it logs a warning and jobs run without that wall.
	Walls string
	// UIDs is the range of uids jobs run as, "FIRST-LAST": each running
	// job takes a uid of its own (a lock under LockDir), so no two jobs
	// ever share a user. Default DefaultUIDs. Used when the worker runs as
	// root and User is "".
	UIDs string
	// LockDir holds the uid leases, shared by every worker of the host.
	// Default DefaultLockDir.
	LockDir string
	// Network is the job's network: "none" (default, also ""): a network
	// namespace of its own with only a loopback of its own, so it cannot
	// reach the farm's NATS, the store or a metadata address; "host": the
	// host's network (an opt-in per harness, logged at start).
	Network string
	// Limits bound every job's resources; a zero field takes its default
	// (see Limits).
	Limits Limits
	// ReadOnly are host paths bound read-only, at the same path, into
	// every job's sandbox besides the system directories (a model cache,
	// say). A missing path is an error.
	ReadOnly []string
	// Writable are host directories bound read-write, at the same path,
	// into every job's sandbox: a hole in the mount wall every job shares
	// (a test's side channel, a debugging scratch), logged at start and
	// named in the mount wall's detail. Never give a cache here: one job
	// would poison it for the next.
	Writable []string
	// Warm is whether rooms may come warm, their sandbox built while
	// the slot's previous job runs (see OpenSpec), and finished rooms are
	// tidied (their cgroups and directories removed) in the background:
	// "on", and then the caller must Close the box when done; "off"
	// (default, also ""): every sandbox is built at its job's start, and
	// Close and Remove tidy before they return. Workers turn it on
	// (isolation.warm).
	Warm string
	// Log receives the box's warnings (jobs run as the worker's own user,
	// a cgroup fallback, walls that are down); "none" chosen is logged at
	// info. Default: no logging.
	Log zerolog.Logger
}

// Values of Config.Sandbox, Config.Walls and Config.Network.
const (
	SandboxBwrap = "bwrap"
	SandboxNone  = "none"
	WallsRequire = "require"
	WallsWarn    = "warn"
	NetworkNone  = "none"
	NetworkHost  = "host"
	WarmOn       = "on"
	WarmOff      = "off"
)

// Defaults of Config.UIDs and Config.LockDir.
const (
	// DefaultUIDs is a range of 65536 uids high above the ones
	// distributions hand out (Debian's dynamic and system users end below
	// 65536; podman and systemd-nspawn allocate from 100000 and 524288
	// upwards in steps of 65536) and below 2^31, which some tools read as
	// signed.
	DefaultUIDs = "2147352576-2147418111"
	// DefaultLockDir holds the uid leases of every worker of the host.
	DefaultLockDir = "/run/benchfleet/uids"
)

// Box opens rooms for jobs. It is safe for concurrent use; any number of
// rooms may be open at once.
type Box struct {
	log         zerolog.Logger
	root        string
	user        ident // the job user; with uids, each room takes its own uid instead
	uids        *uidPool
	worker      ident // the worker's own uid and gid
	killTimeout time.Duration
	// cgroup is the directory job cgroups are made in; "" without cgroups.
	cgroup string
	// sandbox is the bubblewrap binary; "" without a sandbox.
	sandbox  string
	network  string
	limits   Limits
	ctl      controllers
	readOnly []string
	writable []string
	walls    []Wall
	// warmOn is whether rooms may come warm; warm are the warm rooms.
	warmOn bool
	warm   warmPool
	// tidy is the background tidying of finished rooms (with warm on).
	tidy tidyQueue
	// chosenNone is set when the operator chose the worker's own user
	// (User "none"): the uid wall is down by choice.
	chosenNone bool
}

// New validates cfg, fills its defaults, resolves the job user, creates
// Root and sets up the kill mode (a cgroup probe, or the subreaper), the
// sandbox and the limits; it then checks the walls (Walls) and fails, or
// warns, for each one that is down. Errors name the Config field.
func New(cfg Config) (*Box, error) {
	log := cfg.Log.With().Str("component", "box").Logger()
	b := &Box{log: log, killTimeout: cfg.KillTimeout, worker: ident{uid: os.Geteuid(), gid: os.Getegid()}}
	if b.killTimeout < 0 {
		return nil, fmt.Errorf("box: kill timeout %s is negative", cfg.KillTimeout)
	}
	if b.killTimeout == 0 {
		b.killTimeout = DefaultKillTimeout
	}
	switch cfg.Walls {
	case "", WallsRequire, WallsWarn:
	default:
		return nil, fmt.Errorf("box: walls %q is not require or warn", cfg.Walls)
	}
	if cfg.Warm != "" && cfg.Warm != WarmOn && cfg.Warm != WarmOff {
		return nil, fmt.Errorf("box: warm %q is not on or off", cfg.Warm)
	}
	switch cfg.Network {
	case "", NetworkNone:
		b.network = NetworkNone
	case NetworkHost:
		b.network = NetworkHost
	default:
		return nil, fmt.Errorf("box: network %q is not none or host", cfg.Network)
	}
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	b.limits = limits
	for _, p := range cfg.ReadOnly {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("box: read-only path %q is not absolute", p)
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("box: read-only path: %w", err)
		}
		b.readOnly = append(b.readOnly, filepath.Clean(p))
	}
	for _, p := range cfg.Writable {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("box: writable path %q is not absolute", p)
		}
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("box: writable path %q is not a directory (%v)", p, err)
		}
		b.writable = append(b.writable, filepath.Clean(p))
		log.Warn().Str("path", p).Msg("a directory every job may write (isolation writable): jobs can reach each other through it")
	}
	u, err := resolveUser(cfg.User, b.worker.uid, b.worker.gid)
	if err != nil {
		return nil, err
	}
	if len(cfg.Groups) > 0 && !u.switched {
		return nil, fmt.Errorf("box: groups %q: jobs run as the worker's own user (%s), whose groups they keep", cfg.Groups, u.desc)
	}
	for _, g := range cfg.Groups {
		gid, err := lookupGroup(g)
		if err != nil {
			return nil, err
		}
		if gid == 0 {
			return nil, fmt.Errorf("box: group %q is root's group (gid 0): jobs would read what root's group may", g)
		}
		u.groups = append(u.groups, uint32(gid))
		u.desc += fmt.Sprintf(", group %s (%d)", g, gid)
	}
	if cfg.User == "" && b.worker.uid == 0 {
		spec := cfg.UIDs
		if spec == "" {
			spec = DefaultUIDs
		}
		lockDir := cfg.LockDir
		if lockDir == "" {
			lockDir = DefaultLockDir
		}
		if b.uids, err = newUIDPool(spec, lockDir); err != nil {
			return nil, err
		}
		u.desc = fmt.Sprintf("a uid of its own per job (%s)", b.uids)
		if len(u.groups) > 0 {
			u.desc += ", groups " + fmt.Sprint(cfg.Groups)
		}
	}
	b.user = u
	b.chosenNone = cfg.User == UserNone
	if !u.switched {
		ev := log.Warn() // loudly, unless the operator chose it
		if cfg.User == UserNone {
			ev = log.Info()
		}
		ev.Str("user", u.desc).Msg("harness jobs run as the worker's own user: they can read what the worker can")
	}
	if b.root, err = makeRoot(cfg.Root, b.worker, b.user); err != nil {
		return nil, err
	}
	if err := b.besideRooms(b.readOnly, "read-only path"); err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	if err := b.besideRooms(b.writable, "writable path"); err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	switch cfg.Cgroup {
	case "", CgroupAuto, CgroupOn:
		dir, err := setupCgroup()
		if err == nil {
			b.cgroup = dir
			break
		}
		if cfg.Cgroup == CgroupOn {
			return nil, fmt.Errorf("box: cgroup on: %w", err)
		}
		log.Warn().Err(err).Msg("no cgroup per job: a job's orphans are found as the worker's children instead (subreaper)")
		if err := becomeSubreaper(); err != nil {
			return nil, fmt.Errorf("box: cgroup auto: no cgroup per job, and %w", err)
		}
	case CgroupOff:
		if err := becomeSubreaper(); err != nil {
			return nil, fmt.Errorf("box: cgroup off: %w", err)
		}
	default:
		return nil, fmt.Errorf("box: cgroup %q is not auto, on or off", cfg.Cgroup)
	}
	b.ctl = findControllers(b.cgroup, cfg.Cgroup != CgroupOff)
	var sandboxErr error
	switch cfg.Sandbox {
	case "", SandboxBwrap:
		b.sandbox, sandboxErr = setupSandbox(cfg.Bwrap, b)
	case SandboxNone:
	default:
		return nil, fmt.Errorf("box: sandbox %q is not bwrap or none", cfg.Sandbox)
	}
	b.warmOn = b.sandbox != "" && cfg.Warm == WarmOn
	b.walls = b.checkWalls(cfg.Sandbox, sandboxErr)
	// Walls down for one reason are named together, the reason once.
	var down []string
	byWhy := map[string]int{}
	for _, w := range b.walls {
		if w.Up || w.Chosen {
			continue
		}
		if i, ok := byWhy[w.Detail]; ok {
			name, why, _ := strings.Cut(down[i], ": ")
			down[i] = name + " " + w.Name + ": " + why
			continue
		}
		byWhy[w.Detail] = len(down)
		down = append(down, w.Name+": "+w.Detail)
	}
	if len(down) > 0 {
		if cfg.Walls == WallsWarn {
			for _, d := range down {
				log.Warn().Str("wall", d).Msg("a wall of the job box is down (isolation.walls: warn)")
			}
		} else {
			return nil, fmt.Errorf("box: walls down (isolation.walls: require; set warn to run without them): %s", strings.Join(down, "; "))
		}
	}
	if b.network == NetworkHost {
		log.Warn().Msg("harness jobs share the host's network (isolation.network: host): they can reach what the host can")
	}
	return b, nil
}

// User describes the job user for the worker's start log and `benchfleet
// devices`: "a uid of its own per job (uids FIRST-LAST)", a named user
// ("nobody (65534:65534)"), or "none (the worker's own user)".
func (b *Box) User() string { return b.user.desc }

// UserName is the job user's name when jobs run as another user that has
// one ("" otherwise: the worker's own user, or a bare UID:GID, or a uid of
// its own per job: see Room.UserName).
func (b *Box) UserName() string {
	if !b.user.switched || b.uids != nil {
		return ""
	}
	return b.user.name
}

// Cgroups reports whether each room has a cgroup of its own (true) or the
// subreaper fallback finds the job's processes (false).
func (b *Box) Cgroups() bool { return b.cgroup != "" }

// Root is the directory rooms are made in (absolute, symlinks resolved).
func (b *Box) Root() string { return b.root }

// makeRoot creates root (0711) if missing and checks that it is the
// worker's, writable by no one else, and searchable by the job user.
func makeRoot(root string, worker, job ident) (string, error) {
	if root == "" {
		root = filepath.Join(os.TempDir(), RootDirName)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("box: root: %w", err)
	}
	if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(abs, 0o711); err != nil {
			return "", fmt.Errorf("box: root: %w", err)
		}
		if err := os.Chmod(abs, 0o711); err != nil {
			return "", fmt.Errorf("box: root: %w", err)
		}
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("box: root: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("box: root: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("box: root %q is not a directory", abs)
	}
	if uid, _ := owner(st); uid != worker.uid {
		return "", fmt.Errorf("box: root %q is owned by uid %d, not the worker (uid %d)", abs, uid, worker.uid)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("box: root %q is writable by others (mode %v): use a directory only the worker can write", abs, st.Mode().Perm())
	}
	if job.switched {
		if err := searchable(abs, job); err != nil {
			return "", fmt.Errorf("box: root %q: %w", abs, err)
		}
	}
	return abs, nil
}

// searchable checks that every directory from / to dir lets the job user
// search it (by the mode bits; ACLs are not read).
func searchable(dir string, job ident) error {
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !allows(st, job, 1) {
			uid, gid := owner(st)
			return fmt.Errorf("%s (mode %v, owner %d:%d) is not searchable by the job user %s: the job could not reach its room", p, st.Mode().Perm(), uid, gid, job.desc)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
