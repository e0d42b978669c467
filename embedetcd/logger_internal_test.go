package embedetcd

import (
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The storage-version error that a member electing itself at once logs
// before its first backend commit is dropped; the same message with any
// other error, and other errors, still reach the log.
func TestQuietCore_DropsOnlyTheStorageVersionErrorOfAnUncommittedTerm(t *testing.T) {
	obs, logs := observer.New(zapcore.WarnLevel)
	lg := zap.New(quietCore{obs, new(atomic.Bool), new(atomic.Bool)})
	lg.Error(storageVersionMessage, zap.String("cluster-version", "3.7.0"),
		zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	lg.Error(storageVersionMessage, zap.Error(errors.New("backend is closed")))
	lg.Error("apply request took too long", zap.Error(errors.New("missing term information")))
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message+": "+e.ContextMap()["error"].(string))
	}
	want := []string{storageVersionMessage + ": backend is closed", "apply request took too long: missing term information"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("logged %q, want %q", got, want)
	}
}
