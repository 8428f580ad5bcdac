/*
 * Fault injection (issue #8, part 3): every load and create path outside
 * libsched, and whole `schedsim run` and `schedsim fill` commands, with the
 * N-th allocation failing for N = 1, 2, ... until a pass makes no failing
 * allocation. Each pass must report "out of memory" (or, where a failure is
 * harmless, give exactly the result of the fault-free pass), leave no
 * results file half-written under its final name, and free every byte it
 * allocated: the live-allocation count returns to where it started, and
 * LeakSanitizer (the sanitizer test build) checks the rest at exit.
 *
 * How: this binary is linked with -Wl,--wrap=malloc,calloc,realloc,
 * strdup,free (tests/CMakeLists.txt), so every call from the objects
 * linked into it (traces/, sim/, libsched, this file) goes through the
 * __wrap_ functions below; calls made inside shared libraries do not, but
 * cJSON allocates through the hooks sim/config/jsonutil.c installs, which call
 * malloc from sim/ and so are failed too. libsched's own create paths
 * (its allocator hook) are covered by tests/test_libsched.c.
 */
#include "catalog.h"
#include "cli.h"
#include "cluster_spec.h"
#include "fill.h"
#include "research.h"
#include "testutil.h"
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------ the allocator */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_free(void *p);

static int armed;     /* counting (and failing) only while armed */
static long calls;    /* allocation calls since armed */
static long fail_at;  /* the call that fails (1-based; 0: none) */
static long failures; /* calls failed since armed */
static long live;     /* allocated minus freed since armed */

static int fail_now(void) {
  if (!armed)
    return 0;
  if (++calls == fail_at) {
    failures++;
    return 1;
  }
  return 0;
}

void *__wrap_malloc(size_t n) {
  if (fail_now())
    return NULL;
  void *p = __real_malloc(n);
  if (p && armed)
    live++;
  return p;
}

void *__wrap_calloc(size_t n, size_t size) {
  if (fail_now())
    return NULL;
  void *p = __real_calloc(n, size);
  if (p && armed)
    live++;
  return p;
}

void *__wrap_realloc(void *p, size_t n) {
  if (fail_now())
    return NULL;
  void *q = __real_realloc(p, n);
  if (q && !p && armed)
    live++;
  return q;
}

char *__wrap_strdup(const char *s) {
  if (fail_now())
    return NULL;
  char *p = __real_strdup(s);
  if (p && armed)
    live++;
  return p;
}

void __wrap_free(void *p) {
  if (p && armed)
    live--;
  __real_free(p);
}

static void arm(long n) {
  calls = 0;
  fail_at = n;
  failures = 0;
  live = 0;
  armed = 1;
}

static void disarm(void) { armed = 0; }

/* Check allocates inside every ck_assert (libcheck is linked statically, so
 * through the hook too): asserts inside a path run unarmed. */
#define UNARMED(stmt)                                                          \
  do {                                                                         \
    int armed_ = armed;                                                        \
    armed = 0;                                                                 \
    stmt;                                                                      \
    armed = armed_;                                                            \
  } while (0)

/* ------------------------------------------------------------ helpers */

static char dir[512];

static void put(const char *name, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

static const char *in(const char *name) {
  static char p[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static void setup(void) {
  snprintf(dir, sizeof dir, "%s", testutil_tmpdir());
  put("pods.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
      "creation_time,deletion_time,scheduled_time\n"
      "p1,1000,2048,1,500,V100M16|V100M32,LS,Running,0,100,5\n"
      "p2,0,0,0,0,,BE,Pending,10,20,\n\"p,3\",1,1,2,1000,A100,LS,Running,3,"
      "40,4\n");
  put("multi.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                   "a,1000,2048,1,500\nb,0,0,2,1000\n");
  put("pai.csv", "job_name,task_name,inst_num,status,start_time,end_time,"
                 "plan_cpu,plan_mem,plan_gpu,gpu_type\n"
                 "j1,worker,1,Terminated,100,200,600,29.296875,50,V100\n"
                 "j2,ps,3,Failed,150.5,160,50,2,200,T4\n"
                 "j3,w,1,Waiting,,,100,1,100,T4\n");
  put("tiresias.csv",
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,1,0,1000,resnet50,164,1\n1,8,30,500,vgg16,147,10\n");
  put("philly.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n"
                    "2017-10-09 07:01:55,66,1,66,a\n"
                    "2017-10-08 07:01:55,1,8,8,b\n");
  put("generic.csv",
      "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\n"
      "a,0,60,1,250,4000,16384,A100|H100\nb,1.5,30,2,1000,0,0,\n"
      "c,2,10,0,0,1000,512,\nd,3,20,4,1000,1,1,\n");
  static const char swf[] =
      "; Version: 2.2\n"
      "1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
      "2 10 3 -1 -1 -1 -1 16 3600 -1 0 1 1 -1 -1 -1 -1 -1\n"
      "3 20 0 30 4 -1 -1 4 60 -1 2 1 1 -1 -1 -1 -1 -1\n";
  put("t.swf", swf);
  gzFile g = gzopen(in("t.swf.gz"), "wb");
  ck_assert_ptr_nonnull(g);
  gzputs(g, swf);
  ck_assert_int_eq(gzclose(g), Z_OK);
  put("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
                   "n0,32000,262144,0,\nn1,96000,786432,8,V100M32\n"
                   "n2,64000,262144,4,A100\n");
  put("cluster.json",
      "{\"name\": \"mixed\", \"node_groups\": ["
      "{\"name\": \"a\", \"count\": 2, \"gpu_model\": \"A100\", "
      "\"gpus_per_node\": 4, \"cpu_milli\": 64000, \"memory_mib\": 524288, "
      "\"gpu_mode\": \"shared\"},"
      "{\"name\": \"h\", \"count\": 2, \"gpu_model\": \"H100\", "
      "\"gpus_per_node\": 8, \"cpu_milli\": 64000, \"memory_mib\": 524288, "
      "\"gpu_mode\": \"exclusive\", \"price_per_gpu_hour\": 6.5},"
      "{\"name\": \"m\", \"count\": 1, \"gpu_model\": \"A100-SXM4-80GB\", "
      "\"gpus_per_node\": 2, \"cpu_milli\": 1000, \"memory_mib\": 1000, "
      "\"gpu_mode\": \"mig-static\", \"mig_layout\": [\"3g.40gb@0\", "
      "\"2g.20gb@4\", \"1g.10gb@6\"]},"
      "{\"name\": \"d\", \"count\": 1, \"gpu_model\": \"A100\", "
      "\"gpus_per_node\": 2, \"cpu_milli\": 1000, \"memory_mib\": 1000, "
      "\"gpu_mode\": \"mig-dynamic\"},"
      "{\"name\": \"c\", \"count\": 1, \"gpus_per_node\": 0, \"cpu_milli\": "
      "8000, \"memory_mib\": 1024}]}");
  put("manifest.json",
      "{\"name\": \"n\", \"traces\": [\"builtin:default\", {\"path\": "
      "\"generic.csv\", \"label\": \"g\", \"format\": \"generic\"}], "
      "\"clusters\": [\"builtin:default\", \"cluster.json\"], \"policies\": "
      "[\"first-fit\", \"fgd\"], \"queues\": [\"fifo\", \"skip\"], "
      "\"seeds\": [1, 2], \"parameters\": {\"unknown_duration\": [60], "
      "\"swf_gpus_per_proc\": [0.5, 1]}, \"catalog\": \"cat.json\", "
      "\"prices\": {\"G2\": 2.0}, \"check\": true}");
  /* A small catalog for the commands (the built-in one is covered by
   * catalog_and_manifest; parsing it in every pass would multiply the
   * passes by its ~1,500 allocations). */
  put("small_cat.json",
      "{\"models\": [{\"name\": \"A100-SXM4-80GB\", \"aliases\": "
      "[\"A100\"], \"mig\": true, \"price_per_gpu_hour\": 4.0, "
      "\"mig_profiles\": [{\"name\": \"1g.10gb\", \"kind\": \"1g\", "
      "\"compute_slices\": 1, \"memory_slots\": 1, \"starts\": [0, 1, 2, "
      "3, 4, 5, 6], \"memory_gib\": 9.5}, {\"name\": \"2g.20gb\", "
      "\"kind\": \"2g\", \"compute_slices\": 2, \"memory_slots\": 2, "
      "\"starts\": [0, 2, 4], \"memory_gib\": 19.5}, {\"name\": "
      "\"3g.40gb\", \"kind\": \"3g\", \"compute_slices\": 3, "
      "\"memory_slots\": 4, \"starts\": [0, 4], \"memory_gib\": 39.25}]},"
      "{\"name\": \"H100-SXM5-80GB\", \"aliases\": [\"H100\"], "
      "\"price_per_gpu_hour\": null}, {\"name\": \"V100M16\"}, "
      "{\"name\": \"V100M32\", \"price_per_gpu_hour\": 2.5}]}");
  /* The built-in catalog as a file. */
  gpu_catalog cat;
  char err[256];
  ck_assert_int_eq(catalog_load_default(&cat, err, sizeof err), 0);
  catalog_free(&cat);
  extern const unsigned char schedsim_catalog_json[];
  put("cat.json", (const char *)schedsim_catalog_json);
}

/* A path under test: 0, or -1 with a message in msg. It frees everything
 * it allocated either way. */
typedef int (*path_fn)(const void *arg, char *msg, size_t len);

/*
 * Runs fn with allocation N failing, N = 1, 2, ..., until a pass has no
 * failing allocation; each failing pass must fail with "out of memory" in
 * its message (or succeed, if harmless) and free everything. Returns the
 * number of allocations of a whole pass.
 */
static long inject(const char *what, path_fn fn, const void *arg) {
  char msg[2048];
  /* A first pass, not counted, fills what a process keeps once (cJSON's
   * hooks, fill's random table), so that every pass allocates alike. */
  fn(arg, msg, sizeof msg);
  arm(0);
  msg[0] = '\0';
  int rc = fn(arg, msg, sizeof msg);
  long total = calls, leaked = live;
  disarm();
  ck_assert_msg(rc == 0, "%s failed without a fault: %s", what, msg);
  ck_assert_msg(leaked == 0, "%s: %ld allocations not freed", what, leaked);
  ck_assert_msg(total > 0, "%s allocates nothing through the hook", what);
  /* FAULTS_ONLY=N: only pass N, without checks, so that LeakSanitizer
   * shows where the allocations it leaks were made (debugging). */
  const char *only = getenv("FAULTS_ONLY");
  if (only) {
    arm(atol(only));
    fn(arg, msg, sizeof msg);
    disarm();
    return total;
  }
  for (long n = 1;; n++) {
    arm(n);
    msg[0] = '\0';
    rc = fn(arg, msg, sizeof msg);
    long f = failures;
    leaked = live;
    disarm();
    if (f == 0) {
      ck_assert_msg(rc == 0, "%s: %s", what, msg);
      ck_assert_msg(n == total + 1, "%s: %ld allocations, then %ld", what,
                    total, n - 1);
      break;
    }
    ck_assert_msg(rc == 0 || strstr(msg, "out of memory"),
                  "%s, allocation %ld of %ld failing: '%s'", what, n, total,
                  msg);
    ck_assert_msg(leaked == 0,
                  "%s, allocation %ld of %ld failing: %ld allocations not "
                  "freed",
                  what, n, total, leaked);
  }
  return total;
}

/* ------------------------------------------------------------- paths */

static int load_trace(const void *arg, char *msg, size_t len) {
  const char *file = arg;
  trace t;
  trace_init(&t);
  trace_error err;
  err.msg[0] = '\0';
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  if (strstr(file, "generic"))
    o.format = TRACE_FMT_GENERIC; /* the forced path too */
  int rc = trace_load_ex(&t, in(file), &o, &err);
  UNARMED(ck_assert_uint_eq(t.n == 0, rc != 0));
  trace_free(&t);
  snprintf(msg, len, "%s", err.msg);
  return rc;
}

START_TEST(trace_readers) {
  setup();
  static const char *const files[] = {
      "pods.csv",   "multi.csv",   "pai.csv", "tiresias.csv",
      "philly.csv", "generic.csv", "t.swf",   "t.swf.gz"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    inject(files[i], load_trace, files[i]);
}
END_TEST

static int load_nodes(const void *arg, char *msg, size_t len) {
  (void)arg;
  node_list nl;
  node_list_init(&nl);
  trace_error err;
  err.msg[0] = '\0';
  int rc = node_list_load(&nl, in("nodes.csv"), &err);
  node_list_free(&nl);
  snprintf(msg, len, "%s", err.msg);
  return rc;
}

static int load_cluster(const void *arg, char *msg, size_t len) {
  const gpu_catalog *cat = arg;
  int rc = 0;
  static const char *const files[] = {"cluster.json", "nodes.csv"};
  for (size_t i = 0; i < 2 && rc == 0; i++) {
    sim_cluster sc;
    memset(&sc, 0, sizeof sc);
    rc = sim_cluster_load(&sc, in(files[i]), cat, 1, msg, len);
    if (rc == 0) {
      int ck = lsched_cluster_check(sc.c);
      UNARMED(ck_assert_int_eq(ck, LSCHED_OK));
      sim_cluster_free(&sc);
    }
  }
  return rc;
}

START_TEST(nodes_and_clusters) {
  setup();
  inject("node list", load_nodes, NULL);
  gpu_catalog cat;
  char err[256];
  ck_assert_int_eq(catalog_load_default(&cat, err, sizeof err), 0);
  inject("cluster spec and node list", load_cluster, &cat);
  catalog_free(&cat);
}
END_TEST

static int load_catalogs(const void *arg, char *msg, size_t len) {
  (void)arg;
  gpu_catalog cat;
  if (catalog_load_default(&cat, msg, len))
    return -1;
  catalog_free(&cat);
  if (catalog_load_file(&cat, in("cat.json"), msg, len))
    return -1;
  int rc = catalog_override_price(&cat, "G2=2.5", msg, len);
  catalog_free(&cat);
  return rc;
}

static int load_manifest(const void *arg, char *msg, size_t len) {
  (void)arg;
  size_t runs;
  int rc = sweep_manifest_check(in("manifest.json"), &runs, msg, len);
  if (rc == 0)
    UNARMED(ck_assert_uint_eq(runs, 2 * 2 * 2 * 2 * 2 * 2));
  return rc;
}

START_TEST(catalog_and_manifest) {
  setup();
  inject("catalog", load_catalogs, NULL);
  inject("sweep manifest", load_manifest, NULL);
}
END_TEST

/* The synthetic workload and the Alibaba writer: a failed write leaves no
 * file under the final name. */
static int synth_and_write(const void *arg, char *msg, size_t len) {
  (void)arg;
  trace t;
  trace_init(&t);
  synth_params p;
  synth_default_params(&p);
  p.jobs = 40;
  trace_error err;
  err.msg[0] = '\0';
  const char *out = in("synth.csv");
  unlink(out);
  int rc = synth_generate(&t, &p, &err);
  if (rc == 0)
    rc = trace_write_alibaba(&t, out, &err);
  trace_free(&t);
  if (rc)
    UNARMED(
        ck_assert_msg(access(out, F_OK) != 0, "a failed write left %s", out));
  snprintf(msg, len, "%s", err.msg);
  return rc;
}

START_TEST(synth_and_writer) {
  setup();
  inject("synth + write", synth_and_write, NULL);
}
END_TEST

/* ------------------------------------------------------ whole commands */

typedef struct command {
  int (*cmd)(int argc, char **argv);
  const char *const *argv; /* NULL-terminated; "@" is replaced by dir */
  const char *const *outputs;
} command;

/* Reads a whole file; NULL when absent. */
static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *b = __real_malloc(1 << 20);
  ck_assert_ptr_nonnull(b);
  *n = fread(b, 1, (1 << 20) - 1, f);
  b[*n] = '\0';
  fclose(f);
  return b;
}

static char *reference[8];
static size_t reference_n[8];

/* Runs the command with stdout and stderr in files; rc 0, or -1 with the
 * last line of stderr in msg. Checks the outputs: each is absent or
 * byte-identical to the fault-free run's, and no temporary file is left. */
static int run_command(const void *arg, char *msg, size_t len) {
  const command *c = arg;
  char *argv[40];
  char buf[40][1100];
  int argc = 0;
  for (; c->argv[argc]; argc++) {
    const char *a = c->argv[argc];
    if (a[0] == '@')
      snprintf(buf[argc], sizeof buf[argc], "%s%s", dir, a + 1);
    else
      snprintf(buf[argc], sizeof buf[argc], "%s", a);
    argv[argc] = buf[argc];
  }
  argv[argc] = NULL;
  for (int i = 0; c->outputs[i]; i++)
    unlink(in(c->outputs[i]));
  /* stdio's own buffers are allocated inside libc: not counted. */
  int saved = armed;
  armed = 0;
  if (!freopen(in("stderr.txt"), "w", stderr) ||
      !freopen(in("stdout.txt"), "w", stdout))
    ck_abort_msg("freopen: %s", strerror(errno));
  armed = saved;
  int rc = c->cmd(argc, argv);
  armed = 0;
  fflush(stderr);
  fflush(stdout);
  size_t n;
  char *e = slurp(in("stderr.txt"), &n);
  snprintf(msg, len, "exit %d: %s", rc, e ? e : "");
  __real_free(e);
  for (int i = 0; c->outputs[i]; i++) {
    char *o = slurp(in(c->outputs[i]), &n);
    if (!reference[i]) { /* the fault-free pass */
      ck_assert_msg(o != NULL, "no %s", c->outputs[i]);
      reference[i] = o;
      reference_n[i] = n;
      continue;
    }
    if (o) {
      size_t d = 0;
      while (d < n && d < reference_n[i] && o[d] == reference[i][d])
        d++;
      ck_assert_msg(n == reference_n[i] && d == n,
                    "allocation %ld failing: %s differs from the fault-free "
                    "run's at byte %zu: '%.60s' vs '%.60s' (%s)",
                    fail_at, c->outputs[i], d, o + d, reference[i] + d, msg);
    }
    __real_free(o);
  }
  char ls[1200];
  snprintf(ls, sizeof ls, "ls -a %s/out 2>/dev/null | grep -q tmp", dir);
  ck_assert_msg(system(ls) != 0, "a temporary file is left in %s/out", dir);
  /* Out of memory is a failure of the run, not of its inputs. */
  if (rc != 0)
    ck_assert_msg(rc == 1, "%s", msg);
  armed = saved;
  return rc ? -1 : 0;
}

static void inject_command(const char *what, const command *c) {
  for (int i = 0; i < 8; i++) {
    __real_free(reference[i]);
    reference[i] = NULL;
  }
  long total = inject(what, run_command, c);
  fprintf(stderr, "%s: %ld allocations, each failed in turn\n", what, total);
}

START_TEST(run_command_first_fit) {
  setup();
  static const char *const argv[] = {
      "run",      "--cluster", "@/cluster.json",   "--trace", "@/generic.csv",
      "--policy", "first-fit", "--queue",          "skip",    "--check",
      "--quiet",  "--catalog", "@/small_cat.json", "--out",   "@/out",
      NULL};
  static const char *const outs[] = {"out/summary.json", "out/jobs.csv",
                                     "out/timeline.csv", NULL};
  command c = {cmd_run, argv, outs};
  inject_command("schedsim run first-fit", &c);
}
END_TEST

START_TEST(run_command_fgd_nodes) {
  setup();
  static const char *const argv[] = {
      "run",      "--cluster", "@/nodes.csv", "--trace",   "@/pods.csv",
      "--policy", "fgd",       "--quiet",     "--catalog", "@/small_cat.json",
      "--measured-on", "V100M16", /* the catalog lacks G2 */
      "--out",    "@/out",     NULL};
  static const char *const outs[] = {"out/summary.json", "out/jobs.csv",
                                     "out/timeline.csv", NULL};
  command c = {cmd_run, argv, outs};
  inject_command("schedsim run fgd", &c);
}
END_TEST

START_TEST(fill_command) {
  setup();
  static const char *const argv[] = {"fill",
                                     "--cluster",
                                     "@/nodes.csv",
                                     "--trace",
                                     "@/pods.csv",
                                     "--policy",
                                     "fgd",
                                     "--seeds",
                                     "1-2",
                                     "--catalog",
                                     "@/small_cat.json",
                                     "--out",
                                     "@/out",
                                     NULL};
  static const char *const outs[] = {"out/summary.json", "out/fill.csv", NULL};
  command c = {cmd_fill, argv, outs};
  inject_command("schedsim fill", &c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("faults");
  TCase *tc = tcase_create("load");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, trace_readers);
  tcase_add_test(tc, nodes_and_clusters);
  tcase_add_test(tc, catalog_and_manifest);
  tcase_add_test(tc, synth_and_writer);
  suite_add_tcase(s, tc);
  /* One case each, so that CK_RUN_CASE picks one (with FAULTS_ONLY). */
  tc = tcase_create("run_first_fit");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, run_command_first_fit);
  suite_add_tcase(s, tc);
  tc = tcase_create("run_fgd");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, run_command_fgd_nodes);
  suite_add_tcase(s, tc);
  tc = tcase_create("fill");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, fill_command);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
