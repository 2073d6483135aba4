package main

import (
	"fmt"
	"io"
	"slices"

	"golang.org/x/exp/trace"
)

// region is one timed read of the benchmark process.
type region struct {
	name                    string
	g                       trace.GoID
	start, end              trace.Time
	runnable, running, sysc trace.Time
	blocked                 map[string]trace.Time
	stw, mark               trace.Time
}

// client reads the benchmark process' trace (regions named by path) and
// matches its serve-uncached reads with the server's request spans on
// the monotonic clock both traces' clock snapshots give.
func client(path, serverPath string, skip int) {
	r := openTrace(path)
	open := map[trace.GoID]*region{}
	type gstate struct {
		state trace.GoState
		since trace.Time
		why   string
	}
	gs := map[trace.GoID]*gstate{}
	var regions []*region
	var monoAt0 int64
	var trace0 trace.Time
	var stwOpen, markOpen []trace.Time
	var stws, marks [][2]trace.Time
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		switch ev.Kind() {
		case trace.EventSync:
			if cs := ev.Sync().ClockSnapshot; cs != nil && monoAt0 == 0 {
				monoAt0, trace0 = int64(cs.Mono), cs.Trace
			}
		case trace.EventRangeBegin, trace.EventRangeEnd:
			name := ev.Range().Name
			isSTW := len(name) > 14 && name[:14] == "stop-the-world"
			isMark := name == "GC concurrent mark phase"
			if !isSTW && !isMark {
				continue
			}
			if ev.Kind() == trace.EventRangeBegin {
				if isSTW {
					stwOpen = append(stwOpen, ev.Time())
				} else {
					markOpen = append(markOpen, ev.Time())
				}
			} else if isSTW && len(stwOpen) > 0 {
				stws = append(stws, [2]trace.Time{stwOpen[0], ev.Time()})
				stwOpen = stwOpen[1:]
			} else if isMark && len(markOpen) > 0 {
				marks = append(marks, [2]trace.Time{markOpen[0], ev.Time()})
				markOpen = markOpen[1:]
			}
		case trace.EventRegionBegin:
			rg := ev.Region()
			if rg.Type == "go" || rg.Type == "serve-uncached" || rg.Type == "serve" || rg.Type == "baseline" {
				open[ev.Goroutine()] = &region{name: rg.Type, g: ev.Goroutine(), start: ev.Time(), blocked: map[string]trace.Time{}}
			}
		case trace.EventRegionEnd:
			if q := open[ev.Goroutine()]; q != nil {
				if g := gs[q.g]; g != nil && g.state == trace.GoRunning {
					q.running += ev.Time() - max(g.since, q.start)
				}
				q.end = ev.Time()
				regions = append(regions, q)
				delete(open, ev.Goroutine())
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			id := st.Resource.Goroutine()
			from, to := st.Goroutine()
			g := gs[id]
			if g == nil {
				g = &gstate{state: from, since: ev.Time()}
				gs[id] = g
			}
			if q := open[id]; q != nil {
				d := ev.Time() - max(g.since, q.start)
				switch g.state {
				case trace.GoRunnable:
					q.runnable += d
				case trace.GoRunning:
					q.running += d
				case trace.GoSyscall:
					q.sysc += d
				case trace.GoWaiting:
					q.blocked[g.why] += d
				}
			}
			if to == trace.GoWaiting {
				g.why = st.Reason
			}
			g.state, g.since = to, ev.Time()
		}
	}
	for _, q := range regions {
		q.stw, q.mark = overlap(stws, q.start, q.end), overlap(marks, q.start, q.end)
	}
	fmt.Printf("client process: GC cycles %d, stop-the-world pauses %d, regions %d\n", len(marks), len(stws), len(regions))
	mono := func(t trace.Time) int64 { return monoAt0 + int64(t-trace0) }
	spans, smono := serverSpans(serverPath)
	med := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	byName := map[string][]*region{}
	for _, q := range regions {
		byName[q.name] = append(byName[q.name], q)
	}
	for _, name := range []string{"go", "serve-uncached", "serve", "baseline"} {
		qs := byName[name]
		if len(qs) > skip {
			qs = qs[skip:]
		}
		if len(qs) == 0 {
			continue
		}
		col := func(get func(*region) trace.Time) float64 {
			v := make([]float64, len(qs))
			for i, q := range qs {
				v[i] = float64(get(q)) / 1e6
			}
			return med(v)
		}
		fmt.Printf("client %-15s n %4d  p50 %6.3f ms: runnable %6.3f running %6.3f syscalls %6.3f blocked(network/select/chan) %6.3f sync %6.3f  GC STW %6.3f mark %6.3f\n", name, len(qs),
			col(func(q *region) trace.Time { return q.end - q.start }), col(func(q *region) trace.Time { return q.runnable }),
			col(func(q *region) trace.Time { return q.running }), col(func(q *region) trace.Time { return q.sysc }),
			col(func(q *region) trace.Time {
				return q.blocked["network"] + q.blocked["select"] + q.blocked["chan receive"]
			}),
			col(func(q *region) trace.Time { return q.blocked["sync"] }),
			col(func(q *region) trace.Time { return q.stw }), col(func(q *region) trace.Time { return q.mark }))
	}
	// Match serve-uncached reads with the server's spans.
	var before, inServer, after, total, toStart, startToEnd []float64
	j := 0
	for _, q := range byName["serve-uncached"] {
		a, b := mono(q.start), mono(q.end)
		for j < len(spans) && smono(spans[j].wake) < a {
			j++
		}
		if j < len(spans) && smono(spans[j].wake) <= b {
			sp := spans[j]
			before = append(before, float64(smono(sp.wake)-a)/1e6)
			inServer = append(inServer, float64(sp.sent-sp.wake)/1e6)
			after = append(after, float64(b-smono(sp.sent))/1e6)
			total = append(total, float64(b-a)/1e6)
			toStart = append(toStart, float64(sp.sentStart-sp.wake)/1e6)
			startToEnd = append(startToEnd, float64(b-smono(sp.sentStart))/1e6)
		}
	}
	if len(total) > skip {
		before, inServer, after, total = before[skip:], inServer[skip:], after[skip:], total[skip:]
	}
	if len(toStart) > skip {
		toStart, startToEnd = toStart[skip:], startToEnd[skip:]
	}
	fmt.Printf("serve-uncached: woken -> the answer's last write starts p50 %.3f ms; that write's start -> the client's end p50 %.3f ms\n", med(toStart), med(startToEnd))
	neg := 0
	for _, a := range after {
		if a < 0 {
			neg++
		}
	}
	fmt.Printf("client done before the server's last write returned: %d of %d\n", neg, len(after))
	fmt.Printf("serve-uncached matched %d: client p50 %.3f ms = request sent to the server's goroutine woken %.3f + woken to answer written %.3f + answer written to the client's end %.3f (p50 each)\n",
		len(total), med(total), med(before), med(inServer), med(after))
}
