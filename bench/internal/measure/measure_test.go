package measure

import (
	"testing"
	"time"
)

func TestStatCPU_CountsFromTheLastParenthesis(t *testing.T) {
	// A command name with a space and a ')' in it; utime 250 and stime 50
	// ticks are fields 14 and 15.
	stat := []byte("4242 (redis) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 5 0 100 1000000 500 18446744073709551615\n")
	got, err := statCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Errorf("statCPU = %v, %v; want 3s", got, err)
	}
	if _, err := statCPU([]byte("4242 (redis")); err == nil {
		t.Error("statCPU accepted a truncated line")
	}
}
