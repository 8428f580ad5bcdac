/*
 * Models of user runtime estimates (estimate_model.h): the table of models
 * and the one model so far, tsafrir05.
 *
 * tsafrir05 is the modal model of D. Tsafrir, Y. Etsion and D. G.
 * Feitelson, "Modeling User Runtime Estimates", JSSPP 2005 (LNCS 3834,
 * pp. 1-35), as its authors' reference implementation computes it
 * (est_model.hh / est_model.cc of the m_tsafrir05 generator in the
 * Parallel Workloads Archive, with its default parameters and no
 * user-supplied bins). For n jobs and a maximal estimate M (seconds):
 *
 *  1. Number of distinct estimates K (est_model.cc get_binnum, the default
 *     linear model): piecewise linear in n through (0,0) (20,10) (200,20)
 *     (1000,35) (10000,90) (70000,340) (250000,565), 565 beyond.
 *  2. Head (the paper's abstract: "only 20 different values are used as
 *     estimates for about 90% of the jobs"): the times are M
 *     (time-rank 0) and the values of 5m 15m 10m 20m 30m 1h 2h 3h 4h 5h 6h
 *     8h 10h 12h 18h (the estimates all four modeled logs share) below M,
 *     completed to 20 with multiples of 200h, 100h, 50h, 10h, 5h, 2h, 1h,
 *     20m, 10m, 5m counted down from M (gen_head_bintim). Their shares in
 *     percent of jobs by popularity rank x = 2..20 are a e^(bx) + c with
 *     a = 14.0491, b = -0.177531, c = 0.462513, and rank 1 gets 89 minus
 *     their sum: the 20 values hold 89% of the jobs (gen_head_binsiz).
 *     Which time gets which rank follows the paper's table of time-rank to
 *     popularity-rank in four logs (TIMRNK_TO_POPRNK below): M is rank 1;
 *     going up the time-ranks, a rank must be taken at the last time-rank
 *     where it occurs in the table (the smallest such first), else it is
 *     the smaller of two uniform draws from the ranks the table has shown
 *     so far (gen_head_timrnk_poprnk_map).
 *  3. Tail: K - 20 more estimates at times y M with y = (A-1)x/(A-x), x =
 *     i/(K-20) for i = 1..K-20 and A = 1 + 12.1039 K^-0.6026, rounded to
 *     whole minutes and moved by +30, -30, +20, -20, +10 or -10 s (the
 *     first that is new, positive and below M; dropped if none is); their
 *     shares 795.6 r^-2.267 for popularity ranks r = 21, 22, ...,
 *     normalised to the remaining 11%, matched to the times at random
 *     (gen_tail_bintim, gen_tail_binsiz, gen_tail_map).
 *  4. Job counts: max(1, round(share x n / 100)) per estimate, then the
 *     rounding difference taken from or given to the estimates, largest
 *     first: proportionally, then one each, then down to one, then to
 *     zero (adjust_njobs).
 *  5. Assignment (est_assign, shuffle): the n estimates sorted from largest
 *     to smallest and the jobs from longest to shortest; the j-th longest
 *     job draws uniformly one of the estimates left that are at least its
 *     run time. A job longer than the largest estimate is treated as
 *     running for it (it gets the largest, M). The model fails (as the
 *     reference does) when the k-th longest job is longer than the k-th
 *     largest estimate for some k: too many long jobs for M.
 *
 * A share P of jobs at M (model:tsafrir05:MAX_S:P) is the reference's
 * user-supplied bin for M, the mode the paper's abstract describes
 * ("providing our model with only the maximal allowed estimate value,
 * along with the percentage of jobs that have used it"): M gets round(P n
 * / 100) jobs, kept out of step 4, the other head shares are scaled to 89
 * - P (zero from 89 on), and M takes the rank of P among them
 * (gen_head_binsiz, gen_head_binsiz_merge, gen_head_user_constraint).
 *
 * Where this differs from the reference, and why: random draws come from
 * one GSL mt19937 stream seeded by the run's --seed (the reference mixes
 * lrand48 and std::random_shuffle, unseeded by its driver), so estimates
 * are reproducible but not the reference's numbers; ties the reference
 * leaves to std::sort (equal job counts in step 4, equal run times in
 * step 5) are broken by time and by trace position; the shuffle of the
 * pool before a uniform draw from it (step 2) is left out, as it does not
 * change the draw's distribution; and for M below 2 hours, where fewer
 * than 20 head times exist (M = 1h gives 12), only the ranks 1..(that
 * many) are drawn (the reference's table then has rows for ranks that do
 * not exist), the smallest free one when the table offers none.
 */
#include "estimate_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X_(name, fn) {#name, fn},
static const sim_est_model models[] = {SIM_EST_MODELS(X_)};
#undef X_

const sim_est_model *sim_est_model_find(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
    if (strlen(models[i].name) == len && !strncmp(models[i].name, name, len))
      return &models[i];
  return NULL;
}

/* ------------------------------------------------------------- tsafrir05 */

#define MIN_S INT64_C(60)
#define HOUR_S INT64_C(3600)
#define TOP 20
#define NTRACES 4
#define HEAD_SUM 89.0 /* percent of jobs at the TOP head estimates */

/* Popularity rank (1 = most popular) of the estimate with top-20
 * time-rank ttr (0 = the maximum, then 1..19 from the shortest) in the
 * SDSC SP2, CTC SP2, KTH SP2 and LANL Blue logs (est_model.cc
 * TIMRNK_TO_POPRNK, the columns sdsc-106, ctc, kth4h, blue). */
static const unsigned char timrnk_to_poprnk[TOP][NTRACES] = {
    {3, 1, 1, 1},     {1, 3, 4, 6},     {4, 4, 10, 5},    {17, 2, 14, 3},
    {13, 12, 20, 7},  {7, 9, 2, 2},     {8, 8, 3, 18},    {18, 18, 7, 19},
    {2, 6, 12, 4},    {6, 7, 6, 11},    {16, 11, 19, 20}, {10, 20, 5, 9},
    {5, 16, 18, 10},  {15, 5, 16, 14},  {14, 14, 9, 13},  {19, 13, 17, 16},
    {11, 10, 15, 15}, {12, 15, 13, 17}, {9, 17, 8, 8},    {20, 19, 11, 12},
};

/* The estimates all four logs have among their 20 most popular. */
static const int64_t joint_s[] = {
    5 * MIN_S,  15 * MIN_S, 10 * MIN_S,  20 * MIN_S,  30 * MIN_S,
    1 * HOUR_S, 2 * HOUR_S, 3 * HOUR_S,  4 * HOUR_S,  5 * HOUR_S,
    6 * HOUR_S, 8 * HOUR_S, 10 * HOUR_S, 12 * HOUR_S, 18 * HOUR_S};

/* Multiples of these complete the head, counted down from the maximum. */
static const int64_t round_s[] = {
    200 * HOUR_S, 100 * HOUR_S, 50 * HOUR_S, 10 * HOUR_S, 5 * HOUR_S,
    2 * HOUR_S,   1 * HOUR_S,   20 * MIN_S,  10 * MIN_S,  5 * MIN_S};

/* (jobs, distinct estimates): the linear model of K. */
static const struct {
  int njobs, nests;
} binnum_points[] = {{0, 0},      {20, 10},     {200, 20},    {1000, 35},
                     {10000, 90}, {70000, 340}, {250000, 565}};

/* The model's parameters (est_model.hh defaults). */
static const double head_a = 14.0491, head_b = -0.177531, head_c = 0.462513;
static const double tail_a = 795.6, tail_b = -2.267;
static const double bintim_p = 12.1039, bintim_q = -0.6026;

int tsafrir05_binnum(size_t n) {
  size_t np = sizeof binnum_points / sizeof binnum_points[0];
  if (n > (size_t)binnum_points[np - 1].njobs)
    return binnum_points[np - 1].nests;
  size_t k = 1;
  while ((size_t)binnum_points[k].njobs < n)
    k++;
  /* n in (points[k-1].njobs, points[k].njobs] (k = 1 for n = 0). */
  double slope = (double)(binnum_points[k].nests - binnum_points[k - 1].nests) /
                 (double)(binnum_points[k].njobs - binnum_points[k - 1].njobs);
  double left = (double)n - binnum_points[k - 1].njobs;
  return binnum_points[k - 1].nests + (int)round(left * slope);
}

int64_t tsafrir05_default_max(int64_t longest_us) {
  const int64_t hour_us = HOUR_S * 1000000;
  int64_t h = longest_us > 0 ? (longest_us - 1) / hour_us + 1 : 1;
  if (h > SIM_EST_MODEL_MAX_S_MAX / HOUR_S)
    h = SIM_EST_MODEL_MAX_S_MAX / HOUR_S;
  return h * HOUR_S;
}

static int has(const int64_t *v, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x)
      return 1;
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int tsafrir05_head_times(int64_t max_s, int64_t head[TOP]) {
  int n = 0;
  head[n++] = max_s;
  for (size_t i = 0; i < sizeof joint_s / sizeof joint_s[0]; i++)
    if (joint_s[i] < max_s)
      head[n++] = joint_s[i];
  for (size_t i = 0; i < sizeof round_s / sizeof round_s[0] && n < TOP; i++) {
    int64_t mul = round_s[i], start = max_s / mul * mul;
    for (int64_t est = start; est > 0 && n < TOP; est -= mul)
      if (!has(head, n, est))
        head[n++] = est;
  }
  qsort(head + 1, (size_t)n - 1, sizeof *head, cmp_i64);
  return n;
}

/* The popularity rank (1..nt) of each of the nt head times by time-rank
 * (step 2 of the header comment); the maximum (time-rank 0) has max_rank
 * (1 unless a share given for it ranks it lower). */
static void head_ranks(int nt, int max_rank, gsl_rng *r, int rank[TOP]) {
  /* bound[pr]: the last time-rank where pr occurs in the table. */
  int bound[TOP + 1];
  for (int pr = 0; pr <= TOP; pr++)
    bound[pr] = -1;
  for (int ttr = TOP - 1; ttr >= 0; ttr--)
    for (int tr = 0; tr < NTRACES; tr++)
      if (bound[timrnk_to_poprnk[ttr][tr]] < 0)
        bound[timrnk_to_poprnk[ttr][tr]] = ttr;
  int chosen[TOP + 1] = {0};
  int pool[TOP * NTRACES];
  int npool = 0;
  for (int ttr = 0; ttr < nt; ttr++) {
    for (int tr = 0; tr < NTRACES; tr++) {
      int pr = timrnk_to_poprnk[ttr][tr];
      if (pr <= nt && !chosen[pr])
        pool[npool++] = pr;
    }
    int pick = -1;
    if (ttr == 0)
      pick = max_rank; /* the maximum: the most popular by default */
    for (int pr = 1; pick < 0 && pr <= nt; pr++)
      if (bound[pr] <= ttr && !chosen[pr])
        pick = pr; /* due: its last row in the table */
    if (pick < 0 && npool > 0)
      for (int k = 0; k < 2; k++) { /* favour small ranks: best of two */
        int c = pool[gsl_rng_uniform_int(r, (unsigned long)npool)];
        if (pick < 0 || c < pick)
          pick = c;
      }
    for (int pr = 1; pick < 0 && pr <= nt; pr++)
      if (!chosen[pr])
        pick = pr; /* nt < 20 only: the table offers none */
    rank[ttr] = pick;
    chosen[pick] = 1;
    int m = 0;
    for (int i = 0; i < npool; i++)
      if (pool[i] != pick)
        pool[m++] = pool[i];
    npool = m;
  }
}

static int cmp_dbl_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

static void shuffle_i64(int64_t *v, size_t n, gsl_rng *r) {
  for (size_t i = n; i > 1; i--) {
    size_t j = gsl_rng_uniform_int(r, (unsigned long)i);
    int64_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

static void shuffle_dbl(double *v, size_t n, gsl_rng *r) {
  for (size_t i = n; i > 1; i--) {
    size_t j = gsl_rng_uniform_int(r, (unsigned long)i);
    double t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

static int cmp_bin_time(const void *a, const void *b) {
  const sim_est_bin *x = a, *y = b;
  return (x->time_s > y->time_s) - (x->time_s < y->time_s);
}

/* Bins by job count, largest first; equal counts by time. */
static int cmp_bin_size(const void *a, const void *b) {
  const sim_est_bin *x = *(const sim_est_bin *const *)a,
                    *y = *(const sim_est_bin *const *)b;
  if (x->njobs != y->njobs)
    return (x->njobs < y->njobs) - (x->njobs > y->njobs);
  return (x->time_s > y->time_s) - (x->time_s < y->time_s);
}

/* Step 4's equalisation: the bins' counts add up to n after it, the bin
 * of time fixed_s (a count given for it; -1: none) left as it is. 0 or
 * -2. */
static int adjust_njobs(sim_est_bin *bins, int nb, size_t n, int64_t fixed_s) {
  int64_t sum = 0, fixed = 0;
  for (int i = 0; i < nb; i++) {
    sum += bins[i].njobs;
    if (bins[i].time_s == fixed_s)
      fixed = bins[i].njobs;
  }
  int64_t diff = (int64_t)n > sum ? (int64_t)n - sum : sum - (int64_t)n;
  int sign = (int64_t)n > sum ? 1 : -1;
  if (!diff)
    return 0;
  sim_est_bin **by = malloc((size_t)nb * sizeof *by);
  if (!by)
    return -2;
  /* As the reference: the first sum of the other bins. */
  const double jsum = (double)(sum - fixed);
  for (int attempt = 0; diff && attempt < 4; attempt++) {
    int m = 0;
    for (int i = 0; i < nb; i++)
      if (bins[i].time_s != fixed_s)
        by[m++] = &bins[i];
    qsort(by, (size_t)m, sizeof *by, cmp_bin_size);
    double f = (double)diff / jsum;
    int64_t cur = diff;
    for (int i = 0; i < m && cur; i++) {
      int64_t nj = by[i]->njobs, adj;
      if (!nj)
        continue;
      switch (attempt) {
      case 0:
        adj = (int64_t)ceil(f * (double)nj);
        break; /* proportional */
      case 1:
        adj = 1;
        break; /* one each */
      case 2:
        adj = nj - 1;
        break; /* to one */
      default:
        adj = nj;
        break; /* to zero */
      }
      if (sign < 0) {
        if (adj > nj)
          adj = nj;
        if (adj == nj && attempt != 3)
          adj--;
      }
      if (adj > cur)
        adj = cur;
      by[i]->njobs += sign * adj;
      cur -= adj;
    }
    diff = cur;
  }
  free(by);
  return 0;
}

int tsafrir05_dist(sim_est_bin *bins, size_t n, int64_t max_s, double max_pct,
                   gsl_rng *r) {
  int K = tsafrir05_binnum(n);
  /* Head: times, shares by popularity rank, ranks by time-rank. The
   * shares of ranks 2..nt by the exponential, the first 89% less their
   * sum (gen_head_binsiz). Given a share P for the maximum, the others
   * are scaled to 89 - P (zero from P >= 89) and the maximum takes the
   * rank of P among them (gen_head_binsiz_merge; 1 unless P is small). */
  int64_t head[TOP];
  int nt = tsafrir05_head_times(max_s, head);
  double hsize[TOP], sum = 0;
  for (int i = 1; i < nt; i++) {
    hsize[i] = head_a * exp(head_b * (double)(i + 1)) + head_c;
    sum += hsize[i];
  }
  int max_rank = 1;
  if (max_pct > 0) {
    double f = max_pct < HEAD_SUM ? (HEAD_SUM - max_pct) / sum : 0;
    for (int i = 1; i < nt; i++)
      hsize[i] *= f;
    qsort(hsize + 1, (size_t)nt - 1, sizeof *hsize, cmp_dbl_desc);
    while (max_rank < nt && hsize[max_rank] > max_pct) {
      hsize[max_rank - 1] = hsize[max_rank];
      max_rank++;
    }
    hsize[max_rank - 1] = max_pct;
  } else {
    hsize[0] = HEAD_SUM - sum;
    qsort(hsize, (size_t)nt, sizeof *hsize, cmp_dbl_desc);
  }
  int rank[TOP];
  head_ranks(nt, max_rank, r, rank);
  int nb = 0;
  double *pct = malloc(((size_t)(K > nt ? K : nt) + 1) * sizeof *pct);
  int64_t *tail = malloc(((size_t)(K > nt ? K - nt : 0) + 1) * sizeof *tail);
  double *tsize = malloc(((size_t)(K > nt ? K - nt : 0) + 1) * sizeof *tsize);
  if (!pct || !tail || !tsize) {
    free(pct);
    free(tail);
    free(tsize);
    return -2;
  }
  for (int i = 0; i < nt; i++) {
    bins[nb].time_s = head[i];
    pct[nb++] = hsize[rank[i] - 1];
  }
  /* Tail: times on the curve, off the head's and each other's. */
  int want = K - nt, m = 0;
  if (want > 0) {
    double A = 1.0 + bintim_p * pow((double)K, bintim_q);
    static const int off[] = {0, 30, -30, 20, -20, 10, -10};
    for (int i = 1; i <= want; i++) {
      double x = (double)i / (double)want;
      double y = (A - 1.0) * x / (A - x);
      int64_t sec = (int64_t)(round(y * (double)max_s / 60.0) * 60.0);
      for (size_t k = 0; k < sizeof off / sizeof off[0]; k++) {
        int64_t s = sec + off[k];
        if (s > 0 && s < max_s && !has(tail, m, s) && !has(head, nt, s)) {
          tail[m++] = s;
          break;
        }
      }
    }
    double tsum = 0;
    for (int i = 0; i < m; i++)
      tsum += tsize[i] = tail_a * pow((double)(TOP + 1 + i), tail_b);
    for (int i = 0; i < m; i++)
      tsize[i] *= (100.0 - HEAD_SUM) / tsum;
    qsort(tail, (size_t)m, sizeof *tail, cmp_i64);
    shuffle_i64(tail, (size_t)m, r);
    shuffle_dbl(tsize, (size_t)m, r);
    for (int i = 0; i < m; i++) {
      bins[nb].time_s = tail[i];
      pct[nb++] = tsize[i];
    }
  }
  for (int i = 0; i < nb; i++) {
    double j = round(pct[i] * ((double)n / 100.0));
    bins[i].njobs = j < 1 ? 1 : (int64_t)j;
  }
  if (max_pct > 0) { /* the given share, as a count, stays as it is */
    double j = round(max_pct * ((double)n / 100.0));
    bins[0].njobs = j > (double)n ? (int64_t)n : (int64_t)j;
  }
  free(pct);
  free(tail);
  free(tsize);
  qsort(bins, (size_t)nb, sizeof *bins, cmp_bin_time);
  if (adjust_njobs(bins, nb, n, max_pct > 0 ? max_s : -1))
    return -2;
  return nb;
}

/* A job in the assignment: its run time and trace position. */
typedef struct job_run {
  int64_t run;
  uint32_t idx;
} job_run;

/* Longest first; equal run times by trace position. */
static int cmp_job_run(const void *a, const void *b) {
  const job_run *x = a, *y = b;
  if (x->run != y->run)
    return (x->run < y->run) - (x->run > y->run);
  return (x->idx > y->idx) - (x->idx < y->idx);
}

int sim_est_assign(uint32_t *est_s, const int64_t *run_us, size_t n,
                   uint32_t *sests, gsl_rng *r, char *err, size_t errlen) {
  if (!n)
    return 0;
  job_run *jobs = malloc(n * sizeof *jobs);
  if (!jobs)
    return -2;
  /* A job longer than the largest estimate counts as running for it. */
  int64_t cap = (int64_t)sests[0] * 1000000;
  for (size_t i = 0; i < n; i++) {
    jobs[i].idx = (uint32_t)i;
    jobs[i].run = run_us[i] > cap ? cap : run_us[i];
  }
  qsort(jobs, n, sizeof *jobs, cmp_job_run);
  for (size_t k = 0; k < n; k++)
    if (jobs[k].run > (int64_t)sests[k] * 1000000) {
      snprintf(err, errlen,
               "the job at trace position %zu runs %.0f s; %zu jobs run at "
               "least that long but at most %zu of the estimates drawn are "
               "that long (the %zu-th largest is %u s)",
               (size_t)jobs[k].idx + 1, (double)jobs[k].run / 1e6, k + 1, k,
               k + 1, (unsigned)sests[k]);
      free(jobs);
      return -1;
    }
  for (size_t j = 0, hi = 0; j < n; j++) {
    int64_t rj = jobs[j].run;
    if (hi < j)
      hi = j;
    while (hi + 1 < n && rj <= (int64_t)sests[hi + 1] * 1000000)
      hi++;
    size_t k = j + gsl_rng_uniform_int(r, (unsigned long)(hi - j + 1));
    uint32_t e = sests[k];
    est_s[jobs[j].idx] = e;
    sests[k] = sests[j]; /* the unused one stays in the pool */
    sests[j] = e;
  }
  free(jobs);
  return 0;
}

/* The bins' estimates, largest first, into sests (n of them). 0, or -1
 * when the bins do not hold n jobs. */
static int flatten(uint32_t *sests, size_t n, const sim_est_bin *bins, int nb) {
  size_t k = 0;
  for (int b = nb - 1; b >= 0; b--)
    for (int64_t j = 0; j < bins[b].njobs; j++) {
      if (k == n)
        return -1;
      sests[k++] = (uint32_t)bins[b].time_s;
    }
  return k == n ? 0 : -1;
}

/* 1 if the estimates sests (largest first) cover the run times sorted
 * from longest (run_desc, longer than sests[0] counting as sests[0]). */
static int covers(const uint32_t *sests, const int64_t *run_desc, size_t n) {
  int64_t cap = (int64_t)sests[0] * 1000000;
  for (size_t k = 0; k < n; k++)
    if ((run_desc[k] < cap ? run_desc[k] : cap) > (int64_t)sests[k] * 1000000)
      return 0;
  return 1;
}

static int cmp_i64_desc(const void *a, const void *b) { return cmp_i64(b, a); }

/* gsl_rng_mt19937 keeps the low 32 bits of its seed: fold the high half
 * in, as traces/synth.c does. */
static unsigned long fold_seed(uint64_t seed) {
  return (unsigned long)((seed ^ (seed >> 32)) & 0xffffffffu);
}

/* The estimates of n jobs for max_s and max_pct from seed, largest first,
 * into sests; bins is scratch. 0, -2 out of memory. The random stream is
 * left in r for the assignment. */
static int draw(uint32_t *sests, size_t n, int64_t max_s, double max_pct,
                sim_est_bin *bins, gsl_rng *r, uint64_t seed) {
  gsl_rng_set(r, fold_seed(seed));
  int nb = tsafrir05_dist(bins, n, max_s, max_pct, r);
  if (nb < 0)
    return nb;
  return flatten(sests, n, bins, nb) ? -2 : 0;
}

/*
 * When the estimates do not cover the jobs: the smallest share at the
 * maximum, in tenths of a percent from the one tried up to 100, that
 * does. The other draws do not depend on the share from the model's own
 * on (the maximum stays the most popular), and a larger share only moves
 * jobs from shorter estimates to the maximum, so coverage grows with it:
 * a bisection. 0 (none found or out of memory) or the share.
 */
static double covering_share(const int64_t *run_us, size_t n, int64_t max_s,
                             double tried, sim_est_bin *bins, uint32_t *sests,
                             gsl_rng *r, uint64_t seed) {
  int64_t *run = malloc(n * sizeof *run);
  if (!run)
    return 0;
  memcpy(run, run_us, n * sizeof *run);
  qsort(run, n, sizeof *run, cmp_i64_desc);
  int lo = (int)floor(tried * 10), hi = 1000; /* lo fails, hi covers */
  if (draw(sests, n, max_s, 100, bins, r, seed) || !covers(sests, run, n))
    hi = 0;
  while (hi && hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (draw(sests, n, max_s, mid / 10.0, bins, r, seed)) {
      hi = 0;
      break;
    }
    if (covers(sests, run, n))
      hi = mid;
    else
      lo = mid;
  }
  free(run);
  return hi / 10.0;
}

int est_model_tsafrir05(uint32_t *est_s, const int64_t *run_us, size_t n,
                        const sim_est_model_params *p, char *err,
                        size_t errlen) {
  if (!n)
    return 0;
  int64_t max_s = p->max_s;
  if (!max_s) {
    int64_t longest = 0;
    for (size_t i = 0; i < n; i++)
      if (run_us[i] > longest)
        longest = run_us[i];
    max_s = tsafrir05_default_max(longest);
  }
  size_t cap = (size_t)tsafrir05_binnum(n) + TOP;
  sim_est_bin *bins = malloc(cap * sizeof *bins);
  uint32_t *sests = malloc(n * sizeof *sests);
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  int rc = -2;
  if (!bins || !sests || !r)
    goto out;
  if ((rc = draw(sests, n, max_s, p->max_pct, bins, r, p->seed)))
    goto out;
  char why[256];
  rc = sim_est_assign(est_s, run_us, n, sests, r, why, sizeof why);
  if (rc == -1) {
    /* The model's own share is 89 - the sum of ranks 2..20 (~21.7%). */
    double tried = p->max_pct > 0 ? p->max_pct : 21.7;
    double share =
        covering_share(run_us, n, max_s, tried, bins, sests, r, p->seed);
    char hint[128] = "";
    if (share > 0)
      snprintf(hint, sizeof hint,
               ", or a larger share of jobs at it: model:tsafrir05:%lld:%.1f "
               "is the smallest that covers these jobs",
               (long long)max_s, share);
    snprintf(err, errlen,
             "--estimates model:tsafrir05: with a maximal estimate of %lld s "
             "the model cannot give every job an estimate at least its run "
             "time: %s; give a larger maximum (model:tsafrir05:MAX_S)%s",
             (long long)max_s, why, hint);
  }
out:
  gsl_rng_free(r);
  free(bins);
  free(sests);
  return rc;
}
