// The same kind of consumer in C++ (C++11, -Wall -Wextra -Werror): every
// public header, every _INIT macro (no missing-field-initializers warning),
// an observer and a policy table built from their _INIT macros (C++ has no
// designated initialisers before C++20), the MIG tables and the run-time
// version check. Built by tests/cli_install.sh with pkg-config and with the
// CMake package against the installed library.
#include <libsched/libsched.h>
#include <libsched/migrate.h>
#include <libsched/policy_sdk.h>

#include <cstdio>

namespace {

struct counts {
  int allocs = 0, releases = 0;
};

void on_alloc(void *user, const lsched_cluster *, const lsched_placement *,
              int trial) {
  if (!trial)
    static_cast<counts *>(user)->allocs++;
}
void on_release(void *user, const lsched_cluster *, const lsched_placement *,
                int trial) {
  if (!trial)
    static_cast<counts *>(user)->releases++;
}

// A policy of the C++ program: the first node that fits, lowest GPUs.
int first_place(void *, const lsched_cluster *c, const lsched_request *req,
                lsched_placement *out) {
  int pos = lsched_next_fit(c, req, 0);
  if (pos < 0)
    return LSCHED_ENOFIT;
  return lsched_pick_gpus(c, lsched_cluster_order(c)[pos], req,
                          LSCHED_PICK_LOWEST, out);
}

} // namespace

int main() {
  if (lsched_version_check(LSCHED_VERSION_NUMBER) != LSCHED_OK) {
    std::fprintf(stderr, "built against libsched %s, cannot use %s\n",
                 LSCHED_VERSION_STRING, lsched_version_string());
    return 1;
  }
  lsched_cluster_opts opts = LSCHED_CLUSTER_OPTS_INIT;
  opts.check_invariants = 1;
  lsched_cluster *c = nullptr;
  if (lsched_cluster_create(&c, &opts) != LSCHED_OK)
    return 1;
  int h100 = lsched_cluster_model_id(c, "H100", 1);
  if (lsched_mig_use_builtin(c, h100, nullptr) != LSCHED_OK)
    return 1;
  lsched_node_spec n = LSCHED_NODE_SPEC_INIT;
  n.name = "h0";
  n.cpu_milli = 64000;
  n.memory_mib = 256000;
  n.gpu_count = 8;
  n.gpu_model = h100;
  n.gpu_mode = LSCHED_GPU_MIG;
  n.mig_dynamic = 1;
  if (lsched_cluster_add_node(c, &n, nullptr) != LSCHED_OK)
    return 1;

  counts seen;
  lsched_observer obs = LSCHED_OBSERVER_INIT;
  obs.on_alloc = on_alloc;
  obs.on_release = on_release;
  lsched_policy_ops ops = LSCHED_POLICY_OPS_INIT;
  ops.name = "cxx-first";
  ops.place = first_place;
  lsched_registry *reg = nullptr;
  lsched_policy *pol = nullptr;
  if (lsched_cluster_add_observer(c, &obs, &seen) != LSCHED_OK ||
      lsched_registry_create(&reg, nullptr) != LSCHED_OK ||
      lsched_registry_add(reg, &ops) != LSCHED_OK ||
      lsched_policy_create_from(&pol, c, reg, "cxx-first") != LSCHED_OK)
    return 1;

  // Two "3g.40gb" jobs (kind from the profile name, 40 GB each).
  const lsched_mig_profile *prof =
      lsched_mig_profile_from_name("H100-SXM5-80GB", "3g.40gb");
  lsched_placement p[2] = {LSCHED_PLACEMENT_INIT, LSCHED_PLACEMENT_INIT};
  for (int j = 0; j < 2; j++) {
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = 1000;
    r.memory_mib = 1000;
    r.gpu_count = 1;
    r.mig_kind = prof ? prof->kind : LSCHED_MIG_7G;
    r.mig_memory_mib = 40000;
    if (lsched_policy_place(pol, &r, &p[j]) != LSCHED_OK ||
        lsched_alloc(c, &p[j]) != LSCHED_OK) {
      std::fprintf(stderr, "job %d: %s\n", j, lsched_cluster_errmsg(c));
      return 1;
    }
  }
  lsched_mig_gpu_state st = LSCHED_MIG_GPU_STATE_INIT;
  lsched_mig_totals mt = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_gpu_get(c, 0, 0, &st);
  lsched_mig_totals_get(c, &mt);
  for (int j = 1; j >= 0; j--)
    lsched_release(c, &p[j]);
  lsched_totals t = LSCHED_TOTALS_INIT;
  lsched_cluster_totals(c, &t);
  // The unused _INIT macros compile too (C++ brace rules, -Wextra).
  lsched_running run = LSCHED_RUNNING_INIT;
  lsched_move mv = LSCHED_MOVE_INIT;
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  lsched_task_type tt = LSCHED_TASK_TYPE_INIT;
  lsched_frag fr = LSCHED_FRAG_INIT;
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  lsched_view v = LSCHED_VIEW_INIT;
  lsched_frag_types ft = LSCHED_FRAG_TYPES_INIT;
  lsched_frag_cache fc = LSCHED_FRAG_CACHE_INIT;
  lsched_allocator al = LSCHED_ALLOCATOR_INIT;
  lsched_mig_profile mp = LSCHED_MIG_PROFILE_INIT;
  lsched_mig_model mm = LSCHED_MIG_MODEL_INIT;
  bool inits = run.version == LSCHED_RUNNING_VERSION &&
               mv.version == LSCHED_MOVE_VERSION && b.max_moves == 0 &&
               tt.weight == 1 && fr.version == LSCHED_FRAG_VERSION &&
               ni.version == LSCHED_NODE_INFO_VERSION &&
               v.version == LSCHED_VIEW_VERSION &&
               ft.version == LSCHED_FRAG_TYPES_VERSION &&
               fc.version == LSCHED_FRAG_CACHE_VERSION && !al.alloc &&
               mp.version == LSCHED_MIG_PROFILE_VERSION &&
               mm.version == LSCHED_MIG_MODEL_VERSION;
  bool ok = inits && prof && p[0].mig_kind == LSCHED_MIG_3G &&
            p[0].node == 0 && st.ninstances == 2 && mt.slices_used == 6 &&
            seen.allocs == 2 && seen.releases == 2 &&
            t.gpu_milli_free == 8000 && lsched_cluster_check(c) == LSCHED_OK;
  std::printf("libsched %s: %s (C++)\n", lsched_version_string(),
              ok ? "ok" : "FAILED");
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  lsched_cluster_remove_observer(c, &obs, &seen);
  lsched_cluster_destroy(c);
  return ok ? 0 : 1;
}
