package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultClockSamples is how many exchanges estimate a host's clock
// offset: the one with the shortest round trip is kept, and 8 over a warm
// SSH connection take a few milliseconds on a LAN.
const DefaultClockSamples = 8

// Offset is a host's clock minus this one's, estimated NTP-style: the
// remote time read at the middle of the shortest round trip. The true
// offset lies within Uncertainty (half that round trip) of Offset.
type Offset struct {
	Offset      time.Duration `json:"offset_ns"`
	Uncertainty time.Duration `json:"uncertainty_ns"`
	RTT         time.Duration `json:"rtt_ns"`
	Samples     int           `json:"samples"`
}

// ClockSample is one exchange: this clock when the request left and when
// the answer came back, and the remote clock in its answer.
type ClockSample struct {
	Sent, Remote, Received time.Time
}

// EstimateOffset picks the sample with the shortest round trip: its
// one-way delays are the least, so its midpoint is the tightest bound on
// when the remote clock was read.
func EstimateOffset(samples []ClockSample) (Offset, error) {
	best := -1
	for i, s := range samples {
		rtt := s.Received.Sub(s.Sent)
		if rtt < 0 {
			return Offset{}, fmt.Errorf("sample %d: answer received before the request was sent", i)
		}
		if best < 0 || rtt < samples[best].Received.Sub(samples[best].Sent) {
			best = i
		}
	}
	if best < 0 {
		return Offset{}, errors.New("no clock sample")
	}
	s := samples[best]
	rtt := s.Received.Sub(s.Sent)
	mid := s.Sent.Add(rtt / 2)
	return Offset{Offset: s.Remote.Sub(mid), Uncertainty: rtt - rtt/2, RTT: rtt, Samples: len(samples)}, nil
}

// MeasureOffset takes n samples, reading this clock with now around each
// exchange (which returns the remote clock), and estimates the offset.
func MeasureOffset(now func() time.Time, exchange func() (time.Time, error), n int) (Offset, error) {
	if n < 1 {
		return Offset{}, fmt.Errorf("clock samples %d: want at least 1", n)
	}
	samples := make([]ClockSample, 0, n)
	for range n {
		sent := now()
		remote, err := exchange()
		if err != nil {
			return Offset{}, err
		}
		samples = append(samples, ClockSample{Sent: sent, Remote: remote, Received: now()})
	}
	return EstimateOffset(samples)
}

// ServeClock answers every line read from r with this clock's Unix time in
// nanoseconds, one line each, until r ends ("spindle remote clock").
func ServeClock(r io.Reader, w io.Writer, now func() time.Time) error {
	br := bufio.NewReader(r)
	for {
		if _, err := br.ReadString('\n'); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if _, err := fmt.Fprintf(w, "%d\n", now().UnixNano()); err != nil {
			return err
		}
	}
}

// parseClockLine reads one answer of ServeClock.
func parseClockLine(line string) (time.Time, error) {
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}, fmt.Errorf("bad clock answer %q", LastLine([]byte(line)))
	}
	return time.Unix(0, ns), nil
}

// measureClock runs "spindle remote clock" on the host over one SSH
// session, so that the samples' round trips are the network's and not
// ssh's session set-up.
func (h *Host) measureClock(ctx context.Context, n int) (Offset, error) {
	cmd := h.Command(QuoteArgs([]string{h.Exe, "remote", "clock"}))
	in, err := cmd.StdinPipe()
	if err != nil {
		return Offset{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Offset{}, err
	}
	if err := cmd.Start(); err != nil {
		return Offset{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	br := bufio.NewReader(out)
	exchange := func() (time.Time, error) {
		if _, err := io.WriteString(in, "\n"); err != nil {
			return time.Time{}, err
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return time.Time{}, fmt.Errorf("no answer: %w", err)
		}
		return parseClockLine(line)
	}
	off, err := MeasureOffset(time.Now, exchange, n)
	in.Close()
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = werr
	}
	return off, err
}
