// Command tracereport reads the execution traces the API benchmarks write
// (docs/benchmarks.md, "What the server adds"):
//
//	go run ./tests/api/tracereport SERVER.trace [SKIP [CLIENT.trace]]
//
// SERVER.trace is kv0 serve's (-apibench.profile DIR writes
// DIR/BenchmarkSeriesRead_warm-pair/trace.out); for each request served on
// a connection goroutine, from the moment its bytes woke the goroutine to
// the moment it waits for the next one, it sums the time runnable,
// running, in system calls (the answer's writes apart), blocked by reason,
// and the collector's stop-the-world pauses and mark phase overlapping it,
// and prints the medians, the first SKIP requests (the warm-up) left out.
// CLIENT.trace is the benchmark process' (-test.trace): the same sums for
// each timed read's region (go, serve-uncached, serve, baseline), and the
// serve-uncached reads matched with the server's requests on the
// monotonic clock of both traces' clock snapshots.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/exp/trace"
)

// req is one request served on a connection goroutine.
type req struct {
	wake, run, end          trace.Time
	sent                    trace.Time // the end of the last write syscall of the answer
	sentStart               trace.Time // its start
	sysBy                   map[string]trace.Time
	writes                  []trace.Time
	runnable, running, sysc trace.Time
	blocked                 map[string]trace.Time
	stw, mark               trace.Time
}

// stackHas reports whether a frame of s is in a function whose name holds sub.
func stackHas(s trace.Stack, sub string) bool {
	found := false
	for f := range s.Frames() {
		if strings.Contains(f.Func, sub) {
			found = true
		}
	}
	return found
}

// serverSpans reads the server trace at path: its requests, and the
// conversion of its times to the monotonic clock.
func serverSpans(path string) ([]*req, func(trace.Time) int64) {
	r := openTrace(path)
	type gstate struct {
		cur   *req
		state trace.GoState
		since trace.Time
		why   string
		sysOf string
		conn  bool
	}
	gs := map[trace.GoID]*gstate{}
	var done []*req
	var stwOpen, markOpen []trace.Time
	var stws, marks [][2]trace.Time
	var monoAt0 int64
	var trace0 trace.Time
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
			isSTW := strings.HasPrefix(name, "stop-the-world")
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
			} else {
				if isSTW && len(stwOpen) > 0 {
					stws = append(stws, [2]trace.Time{stwOpen[0], ev.Time()})
					stwOpen = stwOpen[1:]
				} else if isMark && len(markOpen) > 0 {
					marks = append(marks, [2]trace.Time{markOpen[0], ev.Time()})
					markOpen = markOpen[1:]
				}
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
			// account the time spent in the previous state to the request
			if g.cur != nil {
				d := ev.Time() - g.since
				switch g.state {
				case trace.GoRunnable:
					g.cur.runnable += d
				case trace.GoRunning:
					g.cur.running += d
				case trace.GoSyscall:
					g.cur.sysc += d
					g.cur.sysBy[g.sysOf] += d
					if g.sysOf == "response write" {
						g.cur.sent = ev.Time()
						g.cur.writes = append(g.cur.writes, d)
					}
				case trace.GoWaiting:
					g.cur.blocked[g.why] += d
				}
			}
			stk := ev.Stack()
			if to == trace.GoSyscall {
				switch {
				case stackHas(stk, "net/http.(*response)") || stackHas(stk, "finishRequest") || stackHas(stk, "holdConn"):
					g.sysOf = "response write"
					if g.cur != nil {
						g.cur.sentStart = ev.Time()
					}
				case stackHas(stk, "fsstore"):
					g.sysOf = "file reads (fsstore)"
				default:
					g.sysOf = "other"
				}
			}
			if to == trace.GoWaiting {
				g.why = st.Reason
				// the connection goroutine waiting for the next request
				if stackHas(stk, "net/http.(*conn).serve") && !stackHas(stk, "ServeHTTP") && (stackHas(stk, "readRequest") || stackHas(stk, "Peek")) {
					g.conn = true
					if g.cur != nil {
						g.cur.end = ev.Time()
						done = append(done, g.cur)
						g.cur = nil
					}
				} else if stackHas(stk, "net/http.(*conn).serve") && stackHas(stk, "ServeHTTP") && g.why == "" {
					g.why = "?"
				}
			}
			if from == trace.GoWaiting && to == trace.GoRunnable && g.conn && g.cur == nil {
				g.cur = &req{wake: ev.Time(), blocked: map[string]trace.Time{}, sysBy: map[string]trace.Time{}}
			}
			if g.cur != nil && g.cur.run == 0 && to == trace.GoRunning {
				g.cur.run = ev.Time()
			}
			g.state, g.since = to, ev.Time()
		}
	}
	for _, q := range done {
		q.stw = overlap(stws, q.wake, q.end)
		q.mark = overlap(marks, q.wake, q.end)
	}
	gcCycles, stwCount = len(marks), len(stws)
	return done, func(t trace.Time) int64 { return monoAt0 + int64(t-trace0) }
}

// gcCycles and stwCount are the server trace's collections and pauses.
var gcCycles, stwCount int

// overlap is how long the spans overlap [a, b].
func overlap(spans [][2]trace.Time, a, b trace.Time) trace.Time {
	var t trace.Time
	for _, s := range spans {
		lo, hi := max(s[0], a), min(s[1], b)
		if hi > lo {
			t += hi - lo
		}
	}
	return t
}

// openTrace opens the trace at path.
func openTrace(path string) *trace.Reader {
	f, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	r, err := trace.NewReader(f)
	if err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	return r
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tracereport:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: tracereport SERVER.trace [SKIP [CLIENT.trace]]"))
	}
	done, _ := serverSpans(os.Args[1])
	if len(done) == 0 {
		fail(fmt.Errorf("%s: no requests served", os.Args[1]))
	}
	skip := 0
	if len(os.Args) > 2 {
		fmt.Sscan(os.Args[2], &skip)
	}
	if skip < len(done) {
		done = done[skip:]
	}
	med := func(get func(*req) trace.Time) float64 {
		v := make([]float64, len(done))
		for i, q := range done {
			v[i] = float64(get(q)) / 1e6
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	mean := func(get func(*req) trace.Time) float64 {
		var s float64
		for _, q := range done {
			s += float64(get(q)) / 1e6
		}
		return s / float64(len(done))
	}
	fmt.Printf("server: requests %d, GC cycles %d (%.2f a request), stop-the-world pauses %d\n", len(done), gcCycles, float64(gcCycles)/float64(len(done)), stwCount)
	row := func(name string, get func(*req) trace.Time) {
		fmt.Printf("%-44s p50 %7.3f ms  mean %7.3f ms\n", name, med(get), mean(get))
	}
	row("span: request bytes noticed -> waits for next", func(q *req) trace.Time { return q.end - q.wake })
	row("  runnable before first running (wake-up)", func(q *req) trace.Time { return q.run - q.wake })
	row("  runnable (all, waiting for a P/thread)", func(q *req) trace.Time { return q.runnable })
	row("  running", func(q *req) trace.Time { return q.running })
	row("  in syscalls", func(q *req) trace.Time { return q.sysc })
	for _, k := range []string{"response write", "file reads (fsstore)", "other"} {
		row("    "+k, func(q *req) trace.Time { return q.sysBy[k] })
	}
	nw := map[int]int{}
	for _, q := range done {
		nw[len(q.writes)]++
	}
	fmt.Printf("    write syscalls per answer: %v\n", nw)
	for i := 0; i < 3; i++ {
		row(fmt.Sprintf("    write syscall #%d", i+1), func(q *req) trace.Time {
			if i < len(q.writes) {
				return q.writes[i]
			}
			return 0
		})
	}
	row("  wake -> the answer's last write starts", func(q *req) trace.Time { return q.sentStart - q.wake })
	row("  wake -> answer written (last write returns)", func(q *req) trace.Time { return q.sent - q.wake })
	reasons := map[string]bool{}
	for _, q := range done {
		for k := range q.blocked {
			reasons[k] = true
		}
	}
	var rs []string
	for k := range reasons {
		rs = append(rs, k)
	}
	slices.Sort(rs)
	for _, k := range rs {
		row("  blocked: "+k, func(q *req) trace.Time { return q.blocked[k] })
	}
	row("  GC stop-the-world overlapping", func(q *req) trace.Time { return q.stw })
	row("  GC mark phase overlapping", func(q *req) trace.Time { return q.mark })
	if len(os.Args) > 3 {
		client(os.Args[3], os.Args[1], skip)
	}
}
