package index

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/benchfleet/benchfleet/storage"
)

// listPartitions lists the results and the index parts of every date
// partition on or after since (all when since is empty), by date.
//
// It lists one prefix per date partition it wants. The dates come from the
// bucket's folders where it can name them cheaply (storage.FolderLister); otherwise
// from datePrefixesFrom, a handful of prefixes whose union is exactly the
// dates on or after since.
func listPartitions(ctx context.Context, b storage.Bucket, since string) ([]*partition, error) {
	var prefixes []string // after "<tree>date="
	if fl, ok := storage.As[storage.FolderLister](b); ok {
		dates, err := folderDates(ctx, fl, since)
		if err != nil {
			return nil, err
		}
		for _, d := range dates {
			prefixes = append(prefixes, d+"/")
		}
	} else if since == "" {
		prefixes = []string{""}
	} else {
		prefixes = datePrefixesFrom(since)
	}
	return listPartitionPrefixes(ctx, b, prefixes, since)
}

// folderDates names the date partitions on or after since that hold results
// or index parts, sorted.
func folderDates(ctx context.Context, fl storage.FolderLister, since string) ([]string, error) {
	seen := map[string]bool{}
	var dates []string
	for _, tree := range []string{storage.PrefixResults, storage.PrefixIndex} {
		names, err := fl.ListFolders(ctx, tree)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if d, ok := strings.CutPrefix(n, "date="); ok && d >= since && !seen[d] {
				seen[d] = true
				dates = append(dates, d)
			}
		}
	}
	slices.Sort(dates)
	return dates, nil
}

// listPartitionPrefixes lists the results and index parts under each
// "<tree>date=<prefix>" and groups them by date (dates before since are
// dropped).
func listPartitionPrefixes(ctx context.Context, b storage.Bucket, prefixes []string, since string) ([]*partition, error) {

	byDate := map[string]*partition{}
	var mu sync.Mutex
	get := func(date string) *partition {
		p := byDate[date]
		if p == nil {
			p = &partition{date: date}
			byDate[date] = p
		}
		return p
	}
	type job struct {
		prefix string
		index  bool
	}
	var jobs []job
	for _, pre := range prefixes {
		jobs = append(jobs, job{storage.PrefixResults + "date=" + pre, false}, job{storage.PrefixIndex + "date=" + pre, true})
	}
	err := parallel(ctx, len(jobs), 8, func(i int) error {
		j := jobs[i]
		var keys []string
		for key, err := range b.List(ctx, j.prefix) {
			if err != nil {
				return err
			}
			keys = append(keys, key)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, key := range keys {
			if j.index {
				date, kind, rk := storage.ClassifyIndexKey(key)
				if kind == storage.IndexOther || date < since {
					continue
				}
				get(date).addIndexKey(kind, key, rk)
				continue
			}
			if date, _, _, ok := storage.ResultKeyParts(key); ok && date >= since {
				p := get(date)
				p.keys = append(p.keys, key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*partition, 0, len(byDate))
	for _, p := range byDate {
		slices.Sort(p.keys)
		slices.Sort(p.parts)
		slices.Sort(p.lates)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *partition) int { return cmp.Compare(a.date, b.date) })
	return out, nil
}

// datePrefixesFrom returns string prefixes whose union is exactly the set of
// dates (YYYY-MM-DD) on or after d, each ending in "/" when it names a whole
// date, so that a listing per prefix visits no partition before d. Dates in
// the far future are covered too: nothing is assumed about the clock.
func datePrefixesFrom(d string) []string {
	out := []string{d + "/"}
	for i := len(d) - 1; i >= 0; i-- {
		c := d[i]
		if c < '0' || c > '9' {
			continue
		}
		for n := c + 1; n <= '9'; n++ {
			p := d[:i] + string(n)
			if i == len(d)-1 {
				p += "/"
			}
			out = append(out, p)
		}
	}
	return out
}
