# sessions.gp: B6's memory and create time against the number of sessions,
# and B8's PTY kind at 10,000 (the last row).
# make bench runs:
#   gnuplot -e "datafile='tests/bench/sessions.dat'; outfile='tests/bench/sessions.png'" \
#       tests/bench/sessions.gp
# sessions.dat columns: 1 sessions, 2 worker PSS total (MiB), 3 worker PSS
# avg (kB), 4 create p50 (ms; B6: the sessions created since the previous
# level, B8: the creates made at 10,000),
# 5 create total (s), 6 dtach masters' PSS for as many sessions (MiB),
# 7 GET /v1/sessions p99 (ms), 8 posix_spawn + waitpid p50 (ms).
if (!exists("datafile")) datafile = 'tests/bench/sessions.dat'
if (!exists("outfile")) outfile = 'tests/bench/sessions.png'
set terminal pngcairo size 960,600 font ",10" noenhanced
set output outfile
set title "lodged B6 (10-1,000) and B8 (10,000): idle PTY sessions running cat (medians over runs)"
set logscale x
set xrange [7:14000]
set xtics ("10" 10, "100" 100, "1,000" 1000, "10,000" 10000)
set xlabel "sessions"
set logscale y
set ylabel "total PSS of the per-session processes (MiB)"
set ytics nomirror
set logscale y2
set y2label "create p50 (ms)"
set y2tics
set grid xtics ytics
set key bottom right box opaque
plot datafile using 1:2 with linespoints lw 2 pt 7 ps 1.2 \
	title "lodged session workers, total PSS", \
     '' using 1:2:(sprintf("%.1f MiB", $2)) with labels offset 0,1.2 \
	notitle, \
     '' using 1:6 with linespoints lw 2 dt 2 pt 5 ps 1.2 \
	title "dtach masters, as many sessions, PSS", \
     '' using 1:4 axes x1y2 with linespoints lw 2 pt 9 ps 1.4 \
	title "create p50 (ms, right axis)", \
     '' using 1:4:(sprintf("%.1f ms", $4)) axes x1y2 with labels \
	offset 0,-1.2 notitle, \
     '' using 1:8 axes x1y2 with linespoints lw 1 dt 3 pt 8 \
	title "posix_spawn + waitpid of /bin/true p50 (ms, right axis)"
