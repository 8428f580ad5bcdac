/*
 * lsched-slurm-advisor without Slurm: the GRES/TRES parsers on the strings
 * Slurm 22.05 produces, the mirror + decision logic on hand-built snapshots
 * (stranding sequence, partitions and their states, --exclude, drained
 * nodes, shards, MIG-like types, the guard), the mirror kept across cycles
 * (nodes drained, removed, added, resized), fgd's target workload, pin
 * ownership (state file + AdminComment marker) and the configuration file.
 * The parts that talk to slurmctld are tested on a real Slurm by
 * tests/cli_slurm.sh.
 *
 * The advisor's pure sources are compiled into this suite (they need only
 * libsched), so it runs whether or not libslurm is installed.
 */
#include "../libsched/slurm/conf.c"
#include "../libsched/slurm/gres.c"
#include "../libsched/slurm/pins.c"
#include "../libsched/slurm/plan.c"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- parsers */

START_TEST(idx_lists) {
  ck_assert_uint_eq(adv_parse_idx("0-1,3", 5), 0xbu);
  ck_assert_uint_eq(adv_parse_idx("N/A", 3), 0);
  ck_assert_uint_eq(adv_parse_idx("7", 1), 0x80u);
  ck_assert_uint_eq(adv_parse_idx("62-70", 5), UINT64_C(3) << 62);
}
END_TEST

START_TEST(mig_like_names) {
  ck_assert(adv_is_mig_like("1g.10gb"));
  ck_assert(adv_is_mig_like("3g.40gb"));
  ck_assert(adv_is_mig_like("1g.10gb+me"));
  ck_assert(adv_is_mig_like("7G.80GB"));
  ck_assert(!adv_is_mig_like("a100"));
  ck_assert(!adv_is_mig_like("10g"));
  ck_assert(!adv_is_mig_like(""));
}
END_TEST

static adv_node node_with(const char *name, const char *gres) {
  adv_node n;
  char err[256];
  memset(&n, 0, sizeof n);
  n.name = strdup(name);
  n.usable = 1;
  n.cpus = 16;
  n.mem_mib = 64000;
  ck_assert_int_eq(adv_node_parse_gres(&n, gres, err, sizeof err), 0);
  return n;
}

START_TEST(node_gres_typed_with_shards) {
  adv_node n = node_with("gn1", "gpu:a100:8(S:0-1),shard:a100:32");
  ck_assert_int_eq(n.ntypes, 1);
  ck_assert_str_eq(n.types[0].name, "a100");
  ck_assert_int_eq(n.gpu_count, 8);
  ck_assert_int_eq(n.shards, 32);
  ck_assert_int_eq(n.shards_per_gpu, 4);
  ck_assert_int_eq(adv_shard_milli(&n, 3), 750);
  free(n.name);
}
END_TEST

START_TEST(node_gres_mig_like) {
  adv_node n = node_with("gn4", "gpu:a100:4,gpu:1g.10gb:7,gpu:3g.40gb:2");
  ck_assert_int_eq(n.ntypes, 3);
  ck_assert_int_eq(n.mirror_type, 0);
  ck_assert_int_eq(n.gpu_count, 4);
  ck_assert_int_eq(n.types[1].first, 4);
  ck_assert_int_eq(n.types[2].first, 11);
  ck_assert(n.types[1].mig_like && n.types[2].mig_like && !n.types[0].mig_like);
  /* An untyped --gpus job got 2 whole GPUs and one slice (IDX 7): only the
   * whole ones are in the mirror. */
  adv_node_apply_job_detail(&n, "gpu:a100:2(IDX:2-3),gpu:1g.10gb:1(IDX:7)");
  ck_assert(n.whole[2] && n.whole[3] && !n.whole[0]);
  free(n.name);
}
END_TEST

START_TEST(node_gres_untyped_and_uneven_shards) {
  adv_node n = node_with("a", "gpu:8");
  ck_assert_int_eq(n.gpu_count, 8);
  ck_assert_str_eq(n.types[0].name, "");
  free(n.name);
  n = node_with("b", "gpu:a100:8,shard:24"); /* 3 per GPU: not exact milli */
  ck_assert_int_eq(n.shards_per_gpu, 0);
  adv_node_apply_job_detail(&n, "shard:1(IDX:5)");
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 5), 1000); /* conservative */
  free(n.name);
  n = node_with("c", "(null)");
  ck_assert_int_eq(n.gpu_count, 0);
  ck_assert_int_eq(n.mirror_type, -1);
  free(n.name);
}
END_TEST

START_TEST(gpu_use_from_jobs_and_gres_used) {
  adv_node n = node_with("gn1", "gpu:a100:8,shard:a100:32");
  adv_node_apply_job_detail(&n, "shard:3(IDX:0)");
  adv_node_apply_job_detail(&n, "shard:a100:1(IDX:0)");
  adv_node_apply_job_detail(&n, "gpu:a100:3(IDX:2,4-5)");
  /* gres_used says GPUs 0 and 1 carry shards: 1 was in no job's detail (a
   * job finishing, say), so it is taken whole. */
  adv_node_apply_gres_used(&n, "gpu:a100:3(IDX:2,4-5),shard:a100:2(IDX:0-1)");
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 0), 1000); /* 4 of 4 shards */
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 1), 1000);
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 2), 1000);
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 3), 0);
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 4), 1000);
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 7), 0);
  free(n.name);
  n = node_with("gn2", "gpu:a100:8,shard:a100:32");
  adv_node_apply_job_detail(&n, "shard:2(IDX:6)");
  adv_node_apply_gres_used(&n, "gpu:a100:0(IDX:N/A),shard:a100:1(IDX:6)");
  ck_assert_int_eq(adv_node_gpu_used_milli(&n, 6), 500);
  free(n.name);
}
END_TEST

START_TEST(tres_requests) {
  char t[64];
  int c, sh;
  ck_assert_int_eq(adv_parse_tres_gpu("gres:gpu:a100:2", t, sizeof t, &c, &sh), 0);
  ck_assert_str_eq(t, "a100");
  ck_assert_int_eq(c, 2);
  ck_assert_int_eq(sh, 0);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:gpu:2", t, sizeof t, &c, &sh), 0);
  ck_assert_str_eq(t, "");
  ck_assert_int_eq(c, 2);
  ck_assert_int_eq(adv_parse_tres_gpu("gres/gpu:a100=3", t, sizeof t, &c, &sh), 0);
  ck_assert_str_eq(t, "a100");
  ck_assert_int_eq(c, 3);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:shard:4", t, sizeof t, &c, &sh), 0);
  ck_assert_int_eq(c, 4);
  ck_assert_int_eq(sh, 1);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:gpu", t, sizeof t, &c, &sh), 0);
  ck_assert_int_eq(c, 1);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:gpu:1g.10gb:3", t, sizeof t, &c, &sh), 0);
  ck_assert_str_eq(t, "1g.10gb");
  ck_assert_int_eq(adv_parse_tres_gpu(NULL, t, sizeof t, &c, &sh), 1);
  ck_assert_int_eq(adv_parse_tres_gpu("", t, sizeof t, &c, &sh), 1);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:nic:1", t, sizeof t, &c, &sh), -1);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:gpu:1,gres:shard:1", t, sizeof t, &c, &sh), -1);
  ck_assert_int_eq(adv_parse_tres_gpu("gres:gpu:1;gres:nic:2", t, sizeof t, &c, &sh), -1);
}
END_TEST

START_TEST(word_lists) {
  ck_assert(adv_list_has("gpu,debug", "debug"));
  ck_assert(adv_list_has("gpu", "gpu"));
  ck_assert(!adv_list_has("gpu2,debug", "gpu"));
  ck_assert(!adv_list_has(NULL, "gpu"));
}
END_TEST

/* ------------------------------------------------------------ decisions */

/* A snapshot of n nodes gn1..gnN (16 CPUs, 64000 MiB, gres), one partition
 * "gpu" holding all of them, and jobs of the given GPU counts (1 CPU,
 * 1000 MiB each) in priority order. */
static void make_snapshot(adv_snapshot *s, int n, const char *gres,
                          const int *gpus, int njobs) {
  memset(s, 0, sizeof *s);
  s->nodes = calloc((size_t)n, sizeof *s->nodes);
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "gn%d", i + 1);
    s->nodes[i] = node_with(name, gres);
  }
  s->nnodes = n;
  s->parts = calloc(1, sizeof *s->parts);
  s->parts[0].name = strdup("gpu");
  s->parts[0].sched = 1;
  s->parts[0].member = calloc((size_t)n, 1);
  memset(s->parts[0].member, 1, (size_t)n);
  s->nparts = 1;
  s->jobs = calloc((size_t)(njobs ? njobs : 1), sizeof *s->jobs);
  for (int k = 0; k < njobs; k++) {
    adv_job *j = &s->jobs[k];
    j->id = (uint32_t)(100 + k);
    j->priority = (uint32_t)(1000 - k);
    j->partition = strdup("gpu");
    j->cpus = 1;
    j->mem_mib = 1000;
    j->gpus = gpus[k];
    snprintf(j->gpu_type, sizeof j->gpu_type, "a100");
  }
  s->njobs = njobs;
}

static const adv_config *config(const char *policy) {
  static adv_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.policy = policy;
  return &cfg;
}

static void decide(adv_plan *pl, adv_snapshot *s, const char *policy) {
  char err[512];
  int rc = adv_plan_build(pl, NULL, s, config(policy), err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  rc = adv_plan_decide(pl, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(lsched_cluster_check(pl->c), LSCHED_OK);
}

static const char *node_of(const adv_plan *pl, int k) {
  const adv_decision *d = &pl->d[k];
  return d->kind == ADV_PLACE ? pl->s->nodes[d->node].name : "-";
}

START_TEST(stranding_sequence) {
  static const int seq[] = {4, 6, 2, 4, 6, 8};
  static const char *const best[] = {"gn1", "gn2", "gn2", "gn1", "gn3", "gn4"};
  static const char *const first[] = {"gn1", "gn2", "gn1", "gn3", "gn4", "-"};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 4, "gpu:a100:8,shard:32", seq, 6);
  decide(&pl, &s, "best-fit");
  for (int k = 0; k < 6; k++)
    ck_assert_str_eq(node_of(&pl, k), best[k]);
  adv_plan_free(&pl);
  /* First fit is what Slurm's cons_tres does: the 8-GPU job is stranded. */
  decide(&pl, &s, "first-fit");
  for (int k = 0; k < 6; k++)
    ck_assert_str_eq(node_of(&pl, k), first[k]);
  ck_assert_int_eq(pl.d[5].kind, ADV_NOFIT);
  lsched_totals t;
  lsched_cluster_totals(pl.c, &t);
  ck_assert_int_eq(t.gpu_milli_free, 10000);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(node_lookup_by_name) {
  static const int seq[] = {1};
  adv_snapshot s;
  make_snapshot(&s, 12, "gpu:a100:8", seq, 1);
  ck_assert_int_eq(adv_snapshot_find_node(&s, "gn10"), 9); /* linear */
  ck_assert_int_eq(adv_snapshot_index(&s), 0);
  for (int i = 0; i < 12; i++)
    ck_assert_int_eq(adv_snapshot_find_node(&s, s.nodes[i].name), i);
  ck_assert_int_eq(adv_snapshot_find_node(&s, "gn13"), -1);
  ck_assert_int_eq(adv_snapshot_find_node(&s, ""), -1);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(running_jobs_are_mirrored) {
  static const int seq[] = {8, 1};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 2, "gpu:a100:8,shard:32", seq, 2);
  s.nodes[0].cpus_alloc = 4;
  s.nodes[0].mem_alloc = 4000;
  adv_node_apply_job_detail(&s.nodes[0], "gpu:a100:1(IDX:3)");
  adv_node_apply_job_detail(&s.nodes[1], "gpu:a100:7(IDX:0-6)");
  decide(&pl, &s, "best-fit");
  ck_assert_int_eq(pl.d[0].kind, ADV_NOFIT); /* no node has 8 free */
  ck_assert_str_eq(node_of(&pl, 1), "gn2");  /* the last GPU of gn2 */
  ck_assert_uint_eq(pl.d[1].place.gpu_mask, 0x80u);
  ck_assert_uint_eq(pl.nbase, 1 + 1 + 7);
  lsched_node_info ni;
  lsched_cluster_node_info(pl.c, 0, &ni);
  ck_assert_int_eq(ni.cpu_free, 12000);
  ck_assert_int_eq(ni.memory_free, 60000);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(nodes_a_job_may_not_use_are_hidden) {
  static const int seq[] = {2, 2, 2, 2, 9};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 4, "gpu:a100:8,shard:32", seq, 5);
  /* gn1 drained: never used. */
  s.nodes[0].usable = 0;
  snprintf(s.nodes[0].state, sizeof s.nodes[0].state, "IDLE+DRAIN");
  /* Job 0 excludes gn2. Job 1 is in partition "small" = {gn4}. Job 2 wants
   * feature "ib", which only gn3 has. Job 3 wants type v100 (absent). Job 4
   * asks 9 GPUs (no node has them). */
  s.jobs[0].excluded = calloc(4, 1);
  s.jobs[0].excluded[1] = 1;
  s.parts = realloc(s.parts, 2 * sizeof *s.parts);
  s.parts[1].name = strdup("small");
  s.parts[1].sched = 1;
  s.parts[1].member = calloc(4, 1);
  s.parts[1].member[3] = 1;
  s.nparts = 2;
  free(s.jobs[1].partition);
  s.jobs[1].partition = strdup("small");
  s.jobs[2].features = strdup("ib");
  s.nodes[2].features = strdup("ib,nvlink");
  snprintf(s.jobs[3].gpu_type, sizeof s.jobs[3].gpu_type, "v100");
  decide(&pl, &s, "best-fit");
  ck_assert_str_eq(node_of(&pl, 0), "gn3"); /* not gn1 (drained), not gn2 */
  ck_assert_int_eq(pl.d[0].nblocked, 1);
  ck_assert_str_eq(node_of(&pl, 1), "gn4");
  ck_assert_str_eq(node_of(&pl, 2), "gn3");
  ck_assert_int_eq(pl.d[3].kind, ADV_NOFIT);
  ck_assert_int_eq(pl.d[3].asked, 0);
  ck_assert_int_eq(pl.d[4].kind, ADV_NOFIT);
  /* The drained node is DRAINING in the mirror, not filled; only the three
   * placements are allocated. */
  ck_assert_int_eq(lsched_cluster_node_state(pl.c, 0), LSCHED_NODE_DRAINING);
  lsched_totals t;
  lsched_cluster_totals(pl.c, &t);
  ck_assert_int_eq(t.gpu_milli_free, 32000 - 3 * 2000);
  ck_assert_int_eq(t.cpu_free, 4 * 16000 - 3 * 1000);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(shards_become_milli) {
  static const int seq[] = {0, 0, 0};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 2, "gpu:a100:8,shard:32", seq, 3);
  /* gn1 has no shards configured: shard jobs never go there. */
  s.nodes[0].shards = 0;
  s.nodes[0].shards_per_gpu = 0;
  s.jobs[0].shards = 2;
  s.jobs[1].shards = 2;
  s.jobs[2].shards = 5; /* more than one GPU has: Slurm 22.05 cannot run it */
  decide(&pl, &s, "best-fit");
  ck_assert_str_eq(node_of(&pl, 0), "gn2");
  ck_assert_int_eq(pl.d[0].place.gpu_milli, 500);
  ck_assert_str_eq(node_of(&pl, 1), "gn2");
  /* best-fit takes the tightest GPU: the two halves share GPU 0. */
  ck_assert_uint_eq(pl.d[0].place.gpu_mask, 1);
  ck_assert_uint_eq(pl.d[1].place.gpu_mask, 1);
  ck_assert_int_eq(pl.d[2].kind, ADV_NOFIT);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(guard_refuses_what_slurm_would_not_run) {
  static const int seq[] = {4};
  adv_snapshot s;
  make_snapshot(&s, 2, "gpu:a100:8,shard:32", seq, 1);
  const char *why;
  const adv_config *cfg = config("best-fit");
  ck_assert(adv_node_can_take(&s, 0, &s.jobs[0], cfg, &why));
  s.jobs[0].cpus = 17;
  ck_assert(!adv_node_can_take(&s, 0, &s.jobs[0], cfg, &why));
  ck_assert_ptr_nonnull(strstr(why, "CPUs"));
  s.jobs[0].cpus = 1;
  s.jobs[0].gpus = 9;
  ck_assert(!adv_node_can_take(&s, 0, &s.jobs[0], cfg, &why));
  s.jobs[0].gpus = 4;
  s.nodes[1].usable = 0;
  ck_assert(!adv_node_can_take(&s, 1, &s.jobs[0], cfg, &why));
  ck_assert_ptr_nonnull(strstr(why, "state"));
  s.parts[0].member[0] = 0;
  ck_assert(!adv_node_can_take(&s, 0, &s.jobs[0], cfg, &why));
  ck_assert_ptr_nonnull(strstr(why, "partition"));
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(unknown_policy_and_bad_param) {
  static const int seq[] = {1};
  adv_snapshot s;
  adv_plan pl;
  char err[512];
  make_snapshot(&s, 1, "gpu:a100:8", seq, 1);
  ck_assert_int_eq(adv_plan_build(&pl, NULL, &s, config("no-such"), err, sizeof err), -2);
  ck_assert_ptr_nonnull(strstr(err, "best-fit"));
  adv_plan_free(&pl);
  adv_config cfg = *config("best-fit");
  char *params[] = {"no-such-key=1"};
  cfg.params = params;
  cfg.nparams = 1;
  ck_assert_int_eq(adv_plan_build(&pl, NULL, &s, &cfg, err, sizeof err), -2);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(json_lines_and_dump) {
  static const int seq[] = {4, 6};
  adv_snapshot s;
  adv_plan pl;
  char err[512], path[1024], line[2048];
  make_snapshot(&s, 2, "gpu:a100:8,shard:32", seq, 2);
  free(s.jobs[0].name);
  s.jobs[0].name = strdup("say \"hi\"\n");
  adv_node_apply_job_detail(&s.nodes[1], "gpu:a100:1(IDX:0)");
  decide(&pl, &s, "best-fit");
  snprintf(path, sizeof path, "%s/lines.jsonl", testutil_tmpdir());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  adv_print_decisions(f, &pl, 3, 1700000000, 1);
  fclose(f);
  f = fopen(path, "r");
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_ptr_nonnull(strstr(line, "\"name\":\"say \\\"hi\\\"\\n\""));
  ck_assert_ptr_nonnull(strstr(line, "\"decision\":\"place\",\"node\":\"gn2\""));
  ck_assert_ptr_nonnull(strstr(line, "\"gpus\":[1,2,3,4]"));
  ck_assert_ptr_nonnull(strstr(line, "\"cycle\":3"));
  ck_assert_ptr_nonnull(strstr(line, "\"dry_run\":true"));
  fclose(f);
  snprintf(path, sizeof path, "%s/dump.json", testutil_tmpdir());
  ck_assert_int_eq(adv_write_dump(&pl, path, err, sizeof err), 0);
  f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(line, 1, sizeof line - 1, f);
  line[n] = '\0';
  fclose(f);
  ck_assert_ptr_nonnull(strstr(line, "\"format\": \"lsched-slurm-advisor-dump 1\""));
  ck_assert_ptr_nonnull(strstr(line, "{\"node\": \"gn2\", \"cpu_milli\": 0, "
                                     "\"memory_mib\": 0, \"gpu_milli\": 1000, "
                                     "\"gpus\": [0]}"));
  ck_assert_ptr_nonnull(strstr(line, "\"decision\": \"place\", \"node\": \"gn1\""));
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST


/* ------------------------------------------------- mirror across cycles */

static adv_decision cycle_with(adv_mirror *m, adv_snapshot *s, int job) {
  char err[512];
  adv_plan pl;
  int rc = adv_plan_build(&pl, m, s, m->cfg, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  rc = adv_plan_decide(&pl, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(lsched_cluster_check(pl.c), LSCHED_OK);
  adv_decision d = pl.d[job];
  d.blocked = NULL;
  d.job = NULL;
  adv_plan_free(&pl);
  /* Between cycles the mirror holds nothing. */
  lsched_totals t;
  lsched_cluster_totals(m->c, &t);
  ck_assert_int_eq(t.gpu_milli_free, t.gpu_milli);
  ck_assert_int_eq(t.cpu_free, t.cpu_milli);
  return d;
}

START_TEST(mirror_kept_across_cycles) {
  static const int seq[] = {8};
  adv_snapshot s;
  adv_mirror m;
  char err[512];
  const adv_config *cfg = config("best-fit");
  ck_assert_int_eq(adv_mirror_init(&m, cfg, err, sizeof err), 0);
  make_snapshot(&s, 3, "gpu:a100:8", seq, 1);
  adv_decision d = cycle_with(&m, &s, 0);
  ck_assert_int_eq(d.kind, ADV_PLACE);
  ck_assert_int_eq(d.node, 0); /* gn1 */
  ck_assert_int_eq(m.added, 3);
  /* gn1 is drained: the mirror keeps it, DRAINING; the job goes to gn2. */
  s.nodes[0].usable = 0;
  snprintf(s.nodes[0].state, sizeof s.nodes[0].state, "IDLE+DRAIN");
  d = cycle_with(&m, &s, 0);
  ck_assert_int_eq(d.node, 1);
  ck_assert_int_eq(m.added + m.removed + m.updated, 0);
  ck_assert_int_eq(m.restated, 1);
  ck_assert_int_eq(lsched_cluster_node_state(m.c, 0), LSCHED_NODE_DRAINING);
  /* Down (not responding): cordoned. Back: up. */
  snprintf(s.nodes[0].state, sizeof s.nodes[0].state, "DOWN*");
  cycle_with(&m, &s, 0);
  ck_assert_int_eq(lsched_cluster_node_state(m.c, 0), LSCHED_NODE_CORDONED);
  s.nodes[0].usable = 1;
  d = cycle_with(&m, &s, 0);
  ck_assert_int_eq(m.restated, 1);
  ck_assert_int_eq(d.node, 0);
  /* gn2 leaves Slurm, gn9 (4 GPUs) joins, gn3 grows to 32 CPUs and gn1 has
   * its GPUs in use: one removal, one addition, one update; the 8-GPU job
   * goes to gn3, now mirror id 2, and gn9 is id 3. */
  free(s.nodes[1].name);
  s.nodes[1] = node_with("gn9", "gpu:a100:4");
  s.nodes[2].cpus = 32;
  adv_node_apply_job_detail(&s.nodes[0], "gpu:a100:1(IDX:0)");
  d = cycle_with(&m, &s, 0);
  ck_assert_int_eq(m.removed, 1);
  ck_assert_int_eq(m.added, 1);
  ck_assert_int_eq(m.updated, 1);
  ck_assert_int_eq(d.node, 2);
  ck_assert_int_eq(d.place.node, 2);
  ck_assert_int_eq(lsched_cluster_node_count(m.c), 4);
  ck_assert_int_eq(lsched_cluster_node_state(m.c, 1), LSCHED_NODE_REMOVED);
  ck_assert_int_eq(lsched_cluster_find_node(m.c, "gn9"), 3);
  lsched_node_info ni;
  ck_assert_int_eq(lsched_cluster_node_info(m.c, 2, &ni), 0);
  ck_assert_int_eq(ni.cpu_milli, 32000);
  /* Nothing changed: nothing is redone. */
  cycle_with(&m, &s, 0);
  ck_assert_int_eq(m.added + m.removed + m.updated + m.restated, 0);
  adv_snapshot_free(&s);
  adv_mirror_free(&m);
}
END_TEST

START_TEST(closed_partitions_are_not_pinned) {
  static const int seq[] = {2, 2, 2};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 2, "gpu:a100:8", seq, 3);
  /* "gpu" (gn1, gn2) is DOWN; "open" (gn2 only) is UP. Job 0 is in gpu
   * only: skipped. Job 1 may use gpu or open: only gn2 (through open).
   * Job 2 is in a DRAIN partition: Slurm still starts its queued jobs. */
  s.parts[0].sched = 0;
  snprintf(s.parts[0].state, sizeof s.parts[0].state, "DOWN");
  s.parts = realloc(s.parts, 3 * sizeof *s.parts);
  s.parts[1].name = strdup("open");
  s.parts[1].sched = 1;
  s.parts[1].member = calloc(2, 1);
  s.parts[1].member[1] = 1;
  s.parts[2].name = strdup("drain");
  s.parts[2].sched = 1;
  snprintf(s.parts[2].state, sizeof s.parts[2].state, "DRAIN");
  s.parts[2].member = calloc(2, 1);
  s.parts[2].member[0] = 1;
  s.nparts = 3;
  free(s.jobs[1].partition);
  s.jobs[1].partition = strdup("gpu,open");
  free(s.jobs[2].partition);
  s.jobs[2].partition = strdup("drain");
  decide(&pl, &s, "first-fit");
  ck_assert_int_eq(pl.d[0].kind, ADV_SKIP);
  ck_assert_str_eq(pl.d[0].note, "partition_down");
  ck_assert_str_eq(node_of(&pl, 1), "gn2");
  ck_assert_int_eq(pl.d[1].nblocked, 1); /* gn1 */
  ck_assert_str_eq(node_of(&pl, 2), "gn1");
  s.parts[0].state[0] = '\0';
  snprintf(s.parts[0].state, sizeof s.parts[0].state, "INACTIVE");
  adv_plan_free(&pl);
  decide(&pl, &s, "first-fit");
  ck_assert_str_eq(pl.d[0].note, "partition_inactive");
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

START_TEST(fgd_workload_from_seen_jobs) {
  static const int seq[] = {4, 4, 1};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 2, "gpu:a100:8,shard:32", seq, 3);
  s.jobs[2].skip = "held"; /* not asked: not in the workload */
  /* Running: a 2-GPU job and a shard:2 job (500 milli) on gn1, and another
   * 2-GPU job (same shape as the first: weight 2). */
  s.shapes = calloc(3, sizeof *s.shapes);
  s.shapes[0] = (adv_shape){1, 2, 0, 0, "a100"};
  s.shapes[1] = (adv_shape){1, 0, 2, 0, ""};
  s.shapes[2] = (adv_shape){1, 2, 0, 1, "a100"};
  s.nshapes = 3;
  decide(&pl, &s, "fgd");
  ck_assert(pl.m->takes_workload);
  /* types: 4 x 1000 (weight 2), 2 x 1000 (weight 2), 1 x 500 (weight 1) */
  ck_assert_uint_eq(pl.m->workload_types, 3);
  ck_assert_uint_eq(pl.m->workload_weight, 5);
  ck_assert_int_eq(pl.d[0].kind, ADV_PLACE);
  adv_plan_free(&pl);
  decide(&pl, &s, "best-fit");
  ck_assert(!pl.m->takes_workload);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

/* ------------------------------------------------------------------ pins */

START_TEST(pin_markers_keep_others_text) {
  char *c = adv_comment_with_marker(NULL, "best-fit", "gn2");
  ck_assert_str_eq(c, "[lsched-slurm-advisor: best-fit placed on gn2]");
  free(c);
  c = adv_comment_with_marker("ticket 42 [ops]", "best-fit", "gn2");
  ck_assert_str_eq(c, "ticket 42 [ops] [lsched-slurm-advisor: best-fit placed on gn2]");
  char node[64];
  ck_assert(adv_marker_node(c, node, sizeof node));
  ck_assert_str_eq(node, "gn2");
  char *c2 = adv_comment_with_marker(c, "fgd", "gn3"); /* replaced, not added */
  ck_assert_str_eq(c2, "ticket 42 [ops] [lsched-slurm-advisor: fgd placed on gn3]");
  char *c3 = adv_comment_without_marker(c2);
  ck_assert_str_eq(c3, "ticket 42 [ops]");
  free(c);
  free(c2);
  free(c3);
  c = adv_comment_without_marker("[lsched-slurm-advisor: best-fit placed on gn1] then text");
  ck_assert_str_eq(c, " then text");
  free(c);
  c = adv_comment_without_marker("lsched-slurm-advisor: best-fit placed on gn1");
  ck_assert_str_eq(c, "lsched-slurm-advisor: best-fit placed on gn1"); /* not a marker */
  free(c);
  ck_assert(!adv_marker_node("text [lsched-slurm-advisor: x placed on ]", node, sizeof node));
  ck_assert(!adv_marker_node(NULL, node, sizeof node));
}
END_TEST

START_TEST(pin_ownership_needs_both_records) {
  adv_pins p;
  memset(&p, 0, sizeof p);
  ck_assert_int_eq(adv_pins_set(&p, 101, "gn2"), 0);
  ck_assert_int_eq(adv_pins_set(&p, 7, "gn1"), 0);
  const char *mk = "ticket 42 [lsched-slurm-advisor: best-fit placed on gn2]";
  /* The case: our pin on a job whose comment held someone's text. */
  ck_assert_int_eq(adv_pin_classify(&p, 101, "gn2", mk), ADV_PIN_OURS);
  ck_assert_int_eq(adv_pin_classify(&p, 101, "gn2", "ticket 42"), ADV_PIN_OTHER);
  ck_assert_int_eq(adv_pin_classify(&p, 102, "gn2", mk), ADV_PIN_OTHER);
  ck_assert_int_eq(adv_pin_classify(&p, 101, "gn3", mk), ADV_PIN_OTHER);
  ck_assert_int_eq(adv_pin_classify(&p, 101, "gn2,gn3", mk), ADV_PIN_OTHER);
  ck_assert_int_eq(adv_pin_classify(&p, 101, NULL, mk), ADV_PIN_NONE);
  ck_assert_int_eq(adv_pin_classify(&p, 101, "", mk), ADV_PIN_NONE);
  /* A user's own -w with no comment. */
  ck_assert_int_eq(adv_pin_classify(&p, 7, "gn1", NULL), ADV_PIN_OTHER);
  ck_assert_int_eq(p.n, 2);
  ck_assert_uint_eq(p.v[0].job, 7); /* sorted */
  ck_assert_int_eq(adv_pins_index(&p, 101), 1);
  ck_assert_int_eq(adv_pins_index(&p, 8), -1);
  adv_pins_del(&p, 7);
  ck_assert_int_eq(adv_pins_index(&p, 101), 0);
  ck_assert_ptr_null(adv_pins_get(&p, 7));
  ck_assert_str_eq(adv_pins_get(&p, 101), "gn2");
  ck_assert_int_eq(adv_pins_set(&p, 5, "bad name"), -1);
  adv_pins_free(&p);
}
END_TEST

START_TEST(pins_state_file) {
  char path[1024], err[512];
  adv_pins p, q;
  memset(&p, 0, sizeof p);
  snprintf(path, sizeof path, "%s/pins", testutil_tmpdir());
  remove(path);
  ck_assert_int_eq(adv_pins_load(&q, path, err, sizeof err), 0); /* none yet */
  ck_assert_int_eq(q.n, 0);
  adv_pins_set(&p, 30, "gn3");
  adv_pins_set(&p, 4, "gn1");
  adv_pins_set(&p, 30, "gn4");
  ck_assert_int_eq(adv_pins_save(&p, path, err, sizeof err), 0);
  ck_assert_int_eq(adv_pins_load(&q, path, err, sizeof err), 0);
  ck_assert_int_eq(q.n, 2);
  ck_assert_str_eq(adv_pins_get(&q, 30), "gn4");
  ck_assert_str_eq(adv_pins_get(&q, 4), "gn1");
  ck_assert(!q.dirty);
  adv_pins_free(&q);
  FILE *f = fopen(path, "a");
  fputs("12 gn1\nx gn2\n", f);
  fclose(f);
  ck_assert_int_eq(adv_pins_load(&q, path, err, sizeof err), -2);
  ck_assert_msg(strstr(err, "/pins:5: want 'JOBID NODE', got 'x gn2'"), "%s", err);
  adv_pins_free(&p);
}
END_TEST

/* ---------------------------------------------------------------- config */

static const char *write_conf(const char *text) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/advisor.conf", testutil_tmpdir());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

START_TEST(config_file_keys) {
  adv_opts o;
  char err[1024], why[256];
  adv_opts_init(&o);
  const char *path = write_conf(
      "# comment\n\n  policy = fgd  \ninterval=2.5\nstate_dir = /tmp/st\n"
      "dry-run = yes\nretries = forever\nmodel = a100=A100-SXM4-80GB\n"
      "param = seed=3\nmax-backoff = 60\nquiet = no\npartition = gpu\n"
      "conf = /etc/slurm/other.conf\ndump = /tmp/d.json\nonce = false\n");
  ck_assert_msg(adv_conf_read(&o, path, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(o.cfg.policy, "fgd");
  ck_assert(o.interval == 2.5);
  ck_assert_str_eq(o.state_dir, "/tmp/st");
  ck_assert_int_eq(o.dry_run, 1);
  ck_assert_int_eq(o.retries, -1);
  ck_assert(o.max_backoff == 60);
  ck_assert_int_eq(o.quiet, 0);
  ck_assert_int_eq(o.once, 0);
  ck_assert_str_eq(o.cfg.partition, "gpu");
  ck_assert_str_eq(o.slurm_conf, "/etc/slurm/other.conf");
  ck_assert_str_eq(o.dump, "/tmp/d.json");
  ck_assert_str_eq(o.cfg.params[0], "seed=3");
  ck_assert_str_eq(adv_model_name(&o.cfg, "a100"), "A100-SXM4-80GB");
  /* The command line comes after the file and wins. */
  ck_assert_int_eq(adv_opts_set(&o, "policy", "best-fit", why, sizeof why), 0);
  ck_assert_int_eq(adv_opts_set(&o, "model", "a100=H100-80GB", why, sizeof why), 0);
  ck_assert_int_eq(adv_opts_set(&o, "retries", "2", why, sizeof why), 0);
  ck_assert_int_eq(adv_opts_set(&o, "once", NULL, why, sizeof why), 0);
  ck_assert_str_eq(o.cfg.policy, "best-fit");
  ck_assert_str_eq(adv_model_name(&o.cfg, "a100"), "H100-80GB");
  ck_assert_int_eq(o.retries, 2);
  ck_assert_int_eq(o.once, 1);
  adv_opts_free(&o);
}
END_TEST

START_TEST(config_file_errors_name_file_line_key) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"policy = fgd\nintervall = 3\n", "advisor.conf:2: key 'intervall': unknown (known: once interval"},
      {"\ninterval = soon\n", "advisor.conf:2: key 'interval': want seconds in 0..86400, got 'soon'"},
      {"retries = -1\n", "advisor.conf:1: key 'retries': want a count or 'forever', got '-1'"},
      {"dry-run = maybe\n", "advisor.conf:1: key 'dry-run': want yes or no, got 'maybe'"},
      {"# x\npolicy fgd\n", "advisor.conf:2: want 'key = value', got 'policy fgd'"},
      {"model = a100\n", "advisor.conf:1: key 'model': want SLURM_TYPE=MODEL, got 'a100'"},
      {"policy =\n", "advisor.conf:1: key 'policy': want a value"},
      {"config = other.conf\n", "advisor.conf:1: key 'config': unknown"},
      {"unpin-all = yes\n", "advisor.conf:1: key 'unpin-all': unknown"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    adv_opts o;
    char err[1024];
    adv_opts_init(&o);
    const char *path = write_conf(cases[i].text);
    ck_assert_int_eq(adv_conf_read(&o, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, cases[i].want), "case %zu: got '%s'", i, err);
    ck_assert_ptr_nonnull(strstr(err, path));
    adv_opts_free(&o);
  }
  adv_opts o;
  char err[1024];
  adv_opts_init(&o);
  ck_assert_int_eq(adv_conf_read(&o, "/nonexistent/advisor.conf", err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "--config /nonexistent/advisor.conf: cannot read"));
  adv_opts_free(&o);
}
END_TEST

START_TEST(every_config_key_is_an_option) {
  /* The table drives both: a key is accepted by adv_opts_set exactly when
   * it is a configuration key or a command-line flag it handles. */
  char why[256];
  for (const adv_option *opt = adv_options; opt->name; opt++) {
    adv_opts o;
    adv_opts_init(&o);
    const char *v = !opt->has_arg ? NULL
                    : !strcmp(opt->name, "model") || !strcmp(opt->name, "param")
                        ? "a=b"
                    : !strcmp(opt->name, "retries") ? "2"
                    : !strcmp(opt->name, "interval") || !strcmp(opt->name, "max-backoff")
                        ? "1"
                        : "x";
    int rc = adv_opts_set(&o, opt->name, v, why, sizeof why);
    if (opt->in_config)
      ck_assert_msg(rc == 0, "%s: %s", opt->name, why);
    adv_opts_free(&o);
  }
}
END_TEST

START_TEST(mig_gres_are_mirrored) {
  /* The test bed's MIG node: 4 whole A100 (IDX 0-3), 7 x 1g.10gb (IDX
   * 4-10), 2 x 3g.40gb (IDX 11-12). Running: a 1g.10gb:3 job on IDX 4-6
   * (2 CPUs, 2000 MiB). */
  static const int seq[] = {4, 1, 2, 4, 1};
  adv_snapshot s;
  adv_plan pl;
  make_snapshot(&s, 1, "gpu:a100:4,gpu:1g.10gb:7,gpu:3g.40gb:2", seq, 5);
  ck_assert_int_eq(adv_mig_kind_of("1g.10gb"), LSCHED_MIG_1G);
  ck_assert_int_eq(adv_mig_kind_of("3g.40gb"), LSCHED_MIG_3G);
  ck_assert_int_eq(adv_mig_kind_of("7g.80gb"), LSCHED_MIG_7G);
  ck_assert_int_eq(adv_mig_kind_of("5g.50gb"), -1);
  ck_assert_int_eq(adv_mig_kind_of("a100"), -1);
  s.nodes[0].cpus_alloc = 2;
  s.nodes[0].mem_alloc = 2000;
  adv_node_apply_job_detail(&s.nodes[0], "gpu:1g.10gb:3(IDX:4-6)");
  adv_node_apply_gres_used(&s.nodes[0], "gpu:a100:0(IDX:N/A),gpu:1g.10gb:3(IDX:4-6),gpu:3g.40gb:0(IDX:N/A)");
  /* Jobs: 1g.10gb:4 (the four left), 1g.10gb:1 (none left), 3g.40gb:2,
   * a100:4 (the whole GPUs), 3g.40gb:1 (none left). */
  const char *types[] = {"1g.10gb", "1g.10gb", "3g.40gb", "a100", "3g.40gb"};
  for (int k = 0; k < 5; k++) {
    snprintf(s.jobs[k].gpu_type, sizeof s.jobs[k].gpu_type, "%s", types[k]);
    s.jobs[k].mig = k != 3;
  }
  decide(&pl, &s, "best-fit");
  /* One plain node and two MIG sub-nodes, static, one instance per GPU. */
  ck_assert_int_eq(lsched_cluster_node_count(pl.c), 3);
  int m1 = lsched_cluster_find_node(pl.c, "gn1/1g.10gb");
  int m3 = lsched_cluster_find_node(pl.c, "gn1/3g.40gb");
  ck_assert_int_ge(m1, 0);
  ck_assert_int_ge(m3, 0);
  lsched_mig_gpu_state g;
  ck_assert_int_eq(lsched_mig_gpu_get(pl.c, m3, 1, &g), 0);
  ck_assert_int_eq(g.dynamic, 0);
  ck_assert_int_eq(g.ninstances, 1);
  ck_assert_int_eq(g.instances[0].kind, LSCHED_MIG_3G);
  ck_assert_int_eq(pl.d[0].kind, ADV_PLACE);
  ck_assert_int_eq(pl.d[0].node, 0);
  ck_assert_int_eq(pl.d[0].place.node, m1);
  ck_assert_uint_eq(pl.d[0].place.gpu_mask, 0x78u); /* instances 3-6 */
  ck_assert_int_eq(pl.d[1].kind, ADV_NOFIT);
  ck_assert_int_eq(pl.d[2].kind, ADV_PLACE);
  ck_assert_uint_eq(pl.d[2].place.gpu_mask, 3u);
  ck_assert_int_eq(pl.d[3].kind, ADV_PLACE);
  ck_assert_int_eq(pl.d[3].place.node, 0);
  ck_assert_uint_eq(pl.d[3].place.gpu_mask, 0xfu);
  ck_assert_int_eq(pl.d[4].kind, ADV_NOFIT);
  lsched_mig_totals mt;
  lsched_mig_totals_get(pl.c, &mt);
  ck_assert_int_eq(mt.in_use[LSCHED_MIG_1G - 1], 7);
  ck_assert_int_eq(mt.in_use[LSCHED_MIG_3G - 1], 2);
  /* Every mirror node of gn1 has the same CPUs left: 16 - 2 running - 3
   * placed jobs of 1 CPU. */
  for (int id = 0; id < 3; id++) {
    lsched_node_info ni;
    ck_assert_int_eq(lsched_cluster_node_info(pl.c, id, &ni), 0);
    ck_assert_int_eq(ni.cpu_free, 16000 - 2000 - 3000);
    ck_assert_int_eq(ni.memory_free, 64000 - 2000 - 3000);
  }
  /* The JSON line names Slurm's indices of the instances chosen. */
  char path[1024], line[2048];
  snprintf(path, sizeof path, "%s/mig.jsonl", testutil_tmpdir());
  FILE *f = fopen(path, "w");
  adv_print_decisions(f, &pl, 1, 1700000000, 1);
  fclose(f);
  f = fopen(path, "r");
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_msg(strstr(line, "\"node\":\"gn1\",\"gpus\":[7,8,9,10],\"gpu_milli\":142"), "%s", line);
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_msg(strstr(line, "\"gpus\":[11,12],\"gpu_milli\":428"), "%s", line);
  fclose(f);
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("advisor");
  TCase *p = tcase_create("parsers");
  tcase_add_test(p, idx_lists);
  tcase_add_test(p, mig_like_names);
  tcase_add_test(p, node_gres_typed_with_shards);
  tcase_add_test(p, node_gres_mig_like);
  tcase_add_test(p, node_gres_untyped_and_uneven_shards);
  tcase_add_test(p, gpu_use_from_jobs_and_gres_used);
  tcase_add_test(p, tres_requests);
  tcase_add_test(p, word_lists);
  suite_add_tcase(s, p);
  TCase *d = tcase_create("decisions");
  tcase_add_test(d, node_lookup_by_name);
  tcase_add_test(d, stranding_sequence);
  tcase_add_test(d, running_jobs_are_mirrored);
  tcase_add_test(d, nodes_a_job_may_not_use_are_hidden);
  tcase_add_test(d, shards_become_milli);
  tcase_add_test(d, guard_refuses_what_slurm_would_not_run);
  tcase_add_test(d, unknown_policy_and_bad_param);
  tcase_add_test(d, json_lines_and_dump);
  tcase_add_test(d, mirror_kept_across_cycles);
  tcase_add_test(d, closed_partitions_are_not_pinned);
  tcase_add_test(d, fgd_workload_from_seen_jobs);
  tcase_add_test(d, mig_gres_are_mirrored);
  suite_add_tcase(s, d);
  TCase *o = tcase_create("pins and config");
  tcase_add_test(o, pin_markers_keep_others_text);
  tcase_add_test(o, pin_ownership_needs_both_records);
  tcase_add_test(o, pins_state_file);
  tcase_add_test(o, config_file_keys);
  tcase_add_test(o, config_file_errors_name_file_line_key);
  tcase_add_test(o, every_config_key_is_an_option);
  suite_add_tcase(s, o);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
