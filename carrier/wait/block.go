package wait

import "time"

func init() {
	Register(Spec{
		Name: "block", Order: 10, SharesCore: true,
		New: func(Options) (Strategy, error) { return Block{}, nil },
	})
}

// Block waits in the kernel (Target.Block) until I/O, a wake-up or the
// deadline: no CPU is spent waiting, and every wait costs one block-and-wake.
type Block struct{}

// Name returns "block".
func (Block) Name() string { return "block" }

// Wait blocks on t unless work is already there.
func (Block) Wait(t Target, deadline int64) Result {
	if t.Ready() {
		return Result{Kind: KindNone}
	}
	return block(t, Now(), deadline, 0)
}

// block blocks on t from start (when it began waiting) after spun ns of
// spinning, and classifies the outcome.
func block(t Target, start, deadline int64, spun time.Duration) Result {
	begin := Now()
	n := t.Block(deadline)
	end := Now()
	r := Result{Kind: KindBlock, Spun: spun, Blocked: time.Duration(end - begin), Events: n}
	if n == 0 && deadline >= 0 && end >= deadline && !t.Ready() {
		r.Kind = KindTimer
	}
	return r
}
