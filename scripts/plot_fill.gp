# Unallocated GPU % against arrived workload (% of GPU capacity) for several
# policies: the FGD paper's Figure 9(a), from `schedsim fill` outputs.
#
#   gnuplot -e "files='out/fgd/default/fgd/fill.csv out/fgd/default/best-fit/fill.csv'" \
#           -e "titles='FGD BestFit'" -e "out='out/fig9a'" scripts/plot_fill.gp
#
# files:  fill.csv files, one per policy (space-separated; no spaces inside)
# titles: legend entries in the same order (default: the files' directories)
# out:    output path without extension; writes OUT.png and OUT.svg
#         (default 'fill')
# from:   first arrived % drawn (default 80; the paper's panel starts there)
#
# Each line is the mean over the seeds in that file of unalloc_pct at each
# integer arrived_pct; the shaded band spans the seeds' minimum to maximum.
# The averaging is done by awk (POSIX; mawk works) while gnuplot reads.

if (!exists("files")) { print "plot_fill.gp: set files='a/fill.csv b/fill.csv'"; exit 1 }
if (!exists("out")) out = 'fill'
if (!exists("from")) from = 80
n = words(files)
if (!exists("titles")) titles = ''
title_of(i) = (words(titles) >= i) ? word(titles, i) : \
    system(sprintf("basename \"$(dirname '%s')\"", word(files, i)))

# arrived, mean, min, max of unalloc_pct over the seeds (empty bins skipped)
stats(f) = sprintf("< awk -F, 'NR > 1 && $4 != \"\" { k = $2 + 0; s[k] += $4; c[k]++; \
    if (!(k in lo) || $4 < lo[k]) lo[k] = $4; if (!(k in hi) || $4 > hi[k]) hi[k] = $4 } \
    END { for (k = 0; k <= 130; k++) if (c[k]) printf \"%%d %%.4f %%s %%s\\n\", k, s[k] / c[k], lo[k], hi[k] }' '%s'", f)

set xlabel 'Arrived workloads (% of GPU capacity)'
set ylabel 'Unallocated GPU (%)'
set xrange [from:130]
set yrange [0:*]
set key top left
set grid
set style fill transparent solid 0.15 noborder

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 900,560 font ",12"
  } else {
    set terminal svg size 900,560 dynamic font ",12"
  }
  set output sprintf("%s.%s", out, fmt)
  plot for [i=1:n] stats(word(files, i)) using 1:3:4 with filledcurves \
           linecolor i notitle, \
       for [i=1:n] stats(word(files, i)) using 1:2 with lines linewidth 2 \
           linecolor i title title_of(i)
  unset output
}
print sprintf("plot_fill.gp: wrote %s.png and %s.svg", out, out)
