package adjudicate

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestPlan_Hammer decides one plan and deliverable from many goroutines,
// through one cache: every result must be the same bytes.
func TestPlan_Hammer(t *testing.T) {
	c := NewCache(4)
	d := mustDeliverable(t, deliverable1K())
	p := mustPlan(t, tenAssertions)
	want := string(p.Decide(d, Record{}).JSON())
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				p, err := c.Plan([]byte(tenAssertions))
				if err != nil {
					errs <- err.Error()
					return
				}
				if got := string(p.Decide(d, Record{}).JSON()); got != want {
					errs <- got
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCache_HammerEvict looks plans up in several spellings from many
// goroutines through a cache too small for them, so that lookups race
// evictions: every lookup must get its criteria's plan, and the spellings
// the cache keeps must all be of plans it holds.
func TestCache_HammerEvict(t *testing.T) {
	c := NewCache(2)
	criteria := func(plan, spelling int) []byte {
		return []byte(`{"assertions":[{"path":"rows","op":"gte","value":` + strconv.Itoa(plan) + `}]` + strings.Repeat(" ", spelling) + `}`)
	}
	want := make([]string, 4)
	for i := range want {
		want[i] = mustPlan(t, string(criteria(i, 0))).Hash()
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 300 {
				i, s := (g+n)%len(want), n%(maxSpellings+2)
				p, err := c.Plan(criteria(i, s))
				if err != nil {
					errs <- err.Error()
					return
				}
				if p.Hash() != want[i] {
					errs <- "plan " + strconv.Itoa(i) + " spelling " + strconv.Itoa(s) + ": hash " + p.Hash()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order.Len() > 2 || len(c.bySpelling) > c.order.Len()*maxSpellings {
		t.Errorf("%d plans and %d spellings held, at most 2 and %d allowed", c.order.Len(), len(c.bySpelling), 2*maxSpellings)
	}
	for _, e := range c.bySpelling {
		if c.byKey[e.Value.(*cached).plan.hash] != e {
			t.Errorf("a spelling of plan %s, which the cache no longer holds", e.Value.(*cached).plan.hash)
		}
	}
}
