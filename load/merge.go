package load

import (
	"errors"
	"fmt"
	"math"

	"github.com/spindle-lab/spindle/latency"
)

// Merge combines the results of load generators that ran together against
// one target (spindle bench --load-hosts): counts and byte totals add up,
// so the merged accounting holds exactly when each part's does; the
// latency histograms are added (HDR merge, lossless) and summarized again;
// rates add up (each over its own window); the window is the longest part's
// and the start the earliest. The configuration is the first part's with
// threads, connections and rate summed. Thread rate statistics are pooled:
// samples, mean, standard deviation and max exactly, the share within one
// standard deviation as the parts' average weighted by their samples (the
// samples themselves are not kept). --slo outcomes are not merged: check
// the merged result again. Request mix entries merge as the totals do;
// every part must have run the same mix (or none). The host steal is the
// part's that lost the most in one sample (mergeSteal): each host's own is
// in its part.
func Merge(parts ...*Result) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge load results: none given")
	}
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("merge load results: part %d missing", i)
		}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("merge load results: part %d: %w", i, err)
		}
	}
	m := &Result{SchemaVersion: SchemaVersion, Config: parts[0].Config, Start: parts[0].Start}
	m.Config.Threads, m.Config.Connections, m.Config.Rate = 0, 0, 0
	var corrected, uncorrected, lags []latency.Summary
	var rates []RateStats
	for _, p := range parts {
		m.Config.Threads += p.Config.Threads
		m.Config.Connections += p.Config.Connections
		m.Config.Rate += p.Config.Rate
		if p.Start.Before(m.Start) {
			m.Start = p.Start
		}
		m.DurationS = math.Max(m.DurationS, p.DurationS)
		m.Intended += p.Intended
		m.Completed += p.Completed
		m.Failed += p.Failed
		m.InFlight += p.InFlight
		m.NotSent += p.NotSent
		m.Sent += p.Sent
		m.BytesRead += p.BytesRead
		m.Warmup += p.Warmup
		m.AchievedRate += p.AchievedRate
		m.TransferRate += p.TransferRate
		m.ByStatus = m.ByStatus.Add(p.ByStatus)
		m.Errors = m.Errors.Add(p.Errors)
		corrected = append(corrected, p.Corrected)
		uncorrected = append(uncorrected, p.Uncorrected)
		if p.SendLag != nil {
			lags = append(lags, *p.SendLag)
		}
		rates = append(rates, p.ThreadReqPerSec)
	}
	var err error
	if m.Corrected, err = mergeSummaries(corrected); err != nil {
		return nil, fmt.Errorf("merge corrected latency: %w", err)
	}
	if m.Uncorrected, err = mergeSummaries(uncorrected); err != nil {
		return nil, fmt.Errorf("merge uncorrected latency: %w", err)
	}
	// The send lag is merged when every part has one (all at a fixed
	// rate); a part without one (closed loop) leaves it out.
	if len(lags) == len(parts) {
		l, err := mergeSummaries(lags)
		if err != nil {
			return nil, fmt.Errorf("merge send lag: %w", err)
		}
		m.SendLag = &l
	}
	m.ThreadReqPerSec = poolRates(rates)
	m.HostSteal = mergeSteal(parts)
	if m.TLS, err = mergeTLS(parts); err != nil {
		return nil, err
	}
	if m.Mix, err = mergeMix(parts); err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("merge load results: %w", err)
	}
	return m, nil
}

// Add returns the sum of two status counts.
func (s StatusCounts) Add(o StatusCounts) StatusCounts {
	return StatusCounts{C1xx: s.C1xx + o.C1xx, C2xx: s.C2xx + o.C2xx, C3xx: s.C3xx + o.C3xx,
		C4xx: s.C4xx + o.C4xx, C5xx: s.C5xx + o.C5xx, Other: s.Other + o.Other}
}

// Add returns the sum of two error counts.
func (e ErrorCounts) Add(o ErrorCounts) ErrorCounts {
	return ErrorCounts{Connect: e.Connect + o.Connect, Read: e.Read + o.Read, Write: e.Write + o.Write,
		Timeout: e.Timeout + o.Timeout, Parse: e.Parse + o.Parse}
}

func mergeSummaries(ss []latency.Summary) (latency.Summary, error) {
	h, err := latency.MergeSummaries(ss...)
	if err != nil {
		return latency.Summary{}, err
	}
	return latency.Summarize(h)
}

// poolRates pools rate statistics: the sums of samples and of squares are
// rebuilt from each part's count, mean and (sample) standard deviation.
func poolRates(rs []RateStats) RateStats {
	var p RateStats
	var sum, sumSq, within float64
	for _, r := range rs {
		n := float64(r.Samples)
		if n == 0 {
			continue
		}
		p.Samples += r.Samples
		sum += n * r.Mean
		sumSq += (n-1)*r.StdDev*r.StdDev + n*r.Mean*r.Mean
		within += n * r.WithinStdev
		p.Max = math.Max(p.Max, r.Max)
	}
	if p.Samples == 0 {
		return p
	}
	n := float64(p.Samples)
	p.Mean = sum / n
	p.WithinStdev = within / n
	if p.Samples > 1 {
		p.StdDev = math.Sqrt(math.Max(0, (sumSq-n*p.Mean*p.Mean)/(n-1)))
	}
	return p
}

// mergeTLS adds the parts' handshake counts and histograms; nil when no
// part ran https.
func mergeTLS(parts []*Result) (*TLSResult, error) {
	var m *TLSResult
	var hs []latency.Summary
	for _, p := range parts {
		t := p.TLS
		if t == nil {
			continue
		}
		if m == nil {
			c := *t
			m = &c
			m.Handshakes, m.TLS12, m.TLS13, m.Resumed, m.HandshakeErrors = 0, 0, 0, 0, 0
		}
		m.Handshakes += t.Handshakes
		m.TLS12 += t.TLS12
		m.TLS13 += t.TLS13
		m.Resumed += t.Resumed
		m.HandshakeErrors += t.HandshakeErrors
		hs = append(hs, t.Handshake)
	}
	if m == nil {
		return nil, nil
	}
	var err error
	if m.Handshake, err = mergeSummaries(hs); err != nil {
		return nil, fmt.Errorf("merge handshake times: %w", err)
	}
	return m, nil
}
