package parse

import "testing"

// useBudget puts a memory budget of the given sizes in the place of the
// process's one until the test ends, and returns it. Tests that call it
// must not run in parallel with others that parse.
func useBudget(t testing.TB, perParse, shared int64) *memoryBudget {
	t.Helper()
	saved := budget.Load()
	b := newMemoryBudget(perParse, shared)
	budget.Store(b)
	t.Cleanup(func() { budget.Store(saved) })
	return b
}

// reserved is what the budget has reserved now, and the most it ever had.
func (b *memoryBudget) reserved() (now, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.peak
}
