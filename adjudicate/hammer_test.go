package adjudicate

import (
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
