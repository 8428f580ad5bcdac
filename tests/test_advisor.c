/*
 * lsched-slurm-advisor without Slurm: the GRES/TRES parsers on the strings
 * Slurm 22.05 produces, and the mirror + decision logic on hand-built
 * snapshots (stranding sequence, partitions, --exclude, drained nodes,
 * shards, MIG-like types, the guard, and that hiding nodes from one job
 * restores the mirror exactly). The parts that talk to slurmctld are tested
 * on a real Slurm by tests/cli_slurm.sh.
 *
 * The advisor's pure sources are compiled into this suite (they need only
 * libsched), so it runs whether or not libslurm is installed.
 */
#include "../libsched/slurm/gres.c"
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
  int rc = adv_plan_build(pl, s, config(policy), err, sizeof err);
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
  /* Job 0 excludes gn2. Job 1 is in partition "small" = {gn4}. Job 2 wants
   * feature "ib", which only gn3 has. Job 3 wants type v100 (absent). Job 4
   * asks 9 GPUs (no node has them). */
  s.jobs[0].excluded = calloc(4, 1);
  s.jobs[0].excluded[1] = 1;
  s.parts = realloc(s.parts, 2 * sizeof *s.parts);
  s.parts[1].name = strdup("small");
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
  /* Only the three placements are left in the mirror besides the drained
   * node's fill: the blockers were all released. */
  lsched_totals t;
  lsched_cluster_totals(pl.c, &t);
  ck_assert_int_eq(t.gpu_milli_free, 32000 - 8000 - 3 * 2000);
  ck_assert_int_eq(t.cpu_free, 4 * 16000 - 16000 - 3 * 1000);
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
  ck_assert_int_eq(adv_plan_build(&pl, &s, config("no-such"), err, sizeof err), -2);
  ck_assert_ptr_nonnull(strstr(err, "best-fit"));
  adv_plan_free(&pl);
  adv_config cfg = *config("best-fit");
  char *params[] = {"no-such-key=1"};
  cfg.params = params;
  cfg.nparams = 1;
  ck_assert_int_eq(adv_plan_build(&pl, &s, &cfg, err, sizeof err), -2);
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
  suite_add_tcase(s, d);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
