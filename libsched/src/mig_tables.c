/*
 * The MIG profile tables of the GPU models the library knows: per model the
 * profile names, kinds, NVIDIA profile IDs, SMs and instance memory, as
 * `nvidia-smi mig -lgip` lists them. Compute slices, memory slots and valid
 * starts are the kind's (the placement table in mig.c), identical on every
 * model. Source: ../shared/data/hardware/mig_profiles.md section 2 (its
 * sources S1-S8: NVIDIA's MIG user guide and published -lgip/-lgipp
 * outputs); the media-extension "+me" profiles are left out.
 *
 * Every table is static const data (no mutable state). memory_mib is
 * round(memory_gib x 1024), written out so that the accounting value is a
 * literal; tests/test_mig.c checks the rounding and that every profile's
 * kind and name agree.
 *
 * verified 0 marks values the source infers rather than shows:
 * - H100-PCIE-80GB: placements inferred, same table as H100 SXM in the MIG
 *   user guide; -lgipp for PCIe not seen.
 * - H200-SXM-141GB: placements inferred, same fractions and counts as H100
 *   in the MIG user guide (H200 -lgipp not seen); 1g.35gb memory and SMs
 *   assumed (32.5 GiB, the same 2 memory slots as 2g.35gb; ~26 SMs as H100
 *   1g.20gb); 3g.71gb and 4g.71gb memory ~65 GiB expected (4 slots).
 * - H100-NVL-94GB: memory is driver-dependent (10.62/21.50/46.12/92.62 GiB
 *   in other outputs); the newest values found are listed.
 */
#include "mig_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define P(name, kind, id, sm, gib, mib, ver)                                   \
  {LSCHED_MIG_PROFILE_VERSION, name, kind, id, sm, gib, mib, ver}

/* Kind order: 1g, 1g-2x, 2g, 3g, 4g, 7g (profiles[k - 1] is kind k). */
static const lsched_mig_profile a100_40[LSCHED_MIG_KINDS] = {
    P("1g.5gb", LSCHED_MIG_1G, 19, 14, 4.75, 4864, 1),
    P("1g.10gb", LSCHED_MIG_1G_2X, 15, 14, 9.62, 9851, 1),
    P("2g.10gb", LSCHED_MIG_2G, 14, 28, 9.62, 9851, 1),
    P("3g.20gb", LSCHED_MIG_3G, 9, 42, 19.5, 19968, 1),
    P("4g.20gb", LSCHED_MIG_4G, 5, 56, 19.5, 19968, 1),
    P("7g.40gb", LSCHED_MIG_7G, 0, 98, 39.25, 40192, 1),
};
static const lsched_mig_profile a100_80[LSCHED_MIG_KINDS] = {
    P("1g.10gb", LSCHED_MIG_1G, 19, 14, 9.5, 9728, 1),
    P("1g.20gb", LSCHED_MIG_1G_2X, 15, 14, 19.5, 19968, 1),
    P("2g.20gb", LSCHED_MIG_2G, 14, 28, 19.5, 19968, 1),
    P("3g.40gb", LSCHED_MIG_3G, 9, 42, 39.25, 40192, 1),
    P("4g.40gb", LSCHED_MIG_4G, 5, 56, 39.25, 40192, 1),
    P("7g.80gb", LSCHED_MIG_7G, 0, 98, 78.75, 80640, 1),
};
static const lsched_mig_profile h100_sxm[LSCHED_MIG_KINDS] = {
    P("1g.10gb", LSCHED_MIG_1G, 19, 16, 9.75, 9984, 1),
    P("1g.20gb", LSCHED_MIG_1G_2X, 15, 26, 19.62, 20091, 1),
    P("2g.20gb", LSCHED_MIG_2G, 14, 32, 19.62, 20091, 1),
    P("3g.40gb", LSCHED_MIG_3G, 9, 60, 39.5, 40448, 1),
    P("4g.40gb", LSCHED_MIG_4G, 5, 64, 39.5, 40448, 1),
    P("7g.80gb", LSCHED_MIG_7G, 0, 132, 79.25, 81152, 1),
};
static const lsched_mig_profile h100_pcie[LSCHED_MIG_KINDS] = {
    P("1g.10gb", LSCHED_MIG_1G, 19, 14, 9.75, 9984, 0),
    P("1g.20gb", LSCHED_MIG_1G_2X, 15, 14, 19.62, 20091, 0),
    P("2g.20gb", LSCHED_MIG_2G, 14, 30, 19.62, 20091, 0),
    P("3g.40gb", LSCHED_MIG_3G, 9, 46, 39.5, 40448, 0),
    P("4g.40gb", LSCHED_MIG_4G, 5, 62, 39.5, 40448, 0),
    P("7g.80gb", LSCHED_MIG_7G, 0, 114, 79.25, 81152, 0),
};
static const lsched_mig_profile h100_nvl[LSCHED_MIG_KINDS] = {
    P("1g.12gb", LSCHED_MIG_1G, 19, 16, 10.75, 11008, 1),
    P("1g.24gb", LSCHED_MIG_1G_2X, 15, 26, 21.62, 22139, 1),
    P("2g.24gb", LSCHED_MIG_2G, 14, 32, 21.62, 22139, 1),
    P("3g.47gb", LSCHED_MIG_3G, 9, 60, 46.38, 47493, 1),
    P("4g.47gb", LSCHED_MIG_4G, 5, 64, 46.38, 47493, 1),
    P("7g.94gb", LSCHED_MIG_7G, 0, 132, 93.12, 95355, 1),
};
static const lsched_mig_profile h200[LSCHED_MIG_KINDS] = {
    P("1g.18gb", LSCHED_MIG_1G, 19, 16, 16.0, 16384, 0),
    P("1g.35gb", LSCHED_MIG_1G_2X, 15, 26, 32.5, 33280, 0),
    P("2g.35gb", LSCHED_MIG_2G, 14, 32, 32.5, 33280, 0),
    P("3g.71gb", LSCHED_MIG_3G, 9, 60, 65.0, 66560, 0),
    P("4g.71gb", LSCHED_MIG_4G, 5, 64, 65.0, 66560, 0),
    P("7g.141gb", LSCHED_MIG_7G, 0, 132, 140.0, 143360, 0),
};
#undef P

static const char *const a100_40_names[] = {"A100-40GB", "A100-PCIE-40GB",
                                            NULL};
static const char *const a100_80_names[] = {"A100-80GB", "A100-PCIE-80GB",
                                            "A100", NULL};
static const char *const h100_sxm_names[] = {"H100-SXM-80GB", "H100-80GB",
                                             "H100", NULL};
static const char *const h100_pcie_names[] = {"H100-PCIe-80GB", NULL};
static const char *const h100_nvl_names[] = {"H100-94GB", NULL};
static const char *const h200_names[] = {"H200-141GB", "H200", NULL};

#define M(name, aliases, gib, profiles)                                        \
  {LSCHED_MIG_MODEL_VERSION, name, aliases, gib, LSCHED_MIG_KINDS, profiles}
static const lsched_mig_model builtin_models[] = {
    M("A100-SXM4-40GB", a100_40_names, 40, a100_40),
    M("A100-SXM4-80GB", a100_80_names, 80, a100_80),
    M("H100-SXM5-80GB", h100_sxm_names, 80, h100_sxm),
    M("H100-PCIE-80GB", h100_pcie_names, 80, h100_pcie),
    M("H100-NVL-94GB", h100_nvl_names, 94, h100_nvl),
    M("H200-SXM-141GB", h200_names, 141, h200),
};
#undef M
enum { NBUILTIN = sizeof builtin_models / sizeof builtin_models[0] };

int lsched_mig_builtin_count(void) { return NBUILTIN; }

const lsched_mig_model *lsched_mig_builtin_at(int i) {
  return i >= 0 && i < NBUILTIN ? &builtin_models[i] : NULL;
}

const lsched_mig_model *lsched_mig_builtin_model(const char *name) {
  if (!name)
    return NULL;
  for (int i = 0; i < NBUILTIN; i++) {
    const lsched_mig_model *m = &builtin_models[i];
    if (strcasecmp(m->name, name) == 0)
      return m;
    for (const char *const *a = m->aliases; *a; a++)
      if (strcasecmp(*a, name) == 0)
        return m;
  }
  return NULL;
}

const lsched_mig_profile *lsched_mig_model_profile(const lsched_mig_model *m,
                                                   int kind) {
  if (!m || kind < 1 || kind > LSCHED_MIG_KINDS)
    return NULL;
  for (int i = 0; i < m->nprofiles; i++)
    if (m->profiles[i].kind == kind)
      return &m->profiles[i];
  return NULL;
}

const lsched_mig_profile *lsched_mig_profile_from_name(const char *model,
                                                       const char *profile) {
  const lsched_mig_model *m = lsched_mig_builtin_model(model);
  if (!m || !profile)
    return NULL;
  for (int i = 0; i < m->nprofiles; i++)
    if (strcasecmp(m->profiles[i].name, profile) == 0)
      return &m->profiles[i];
  /* A short kind name ("3g"): that kind's profile. */
  for (int k = 1; k <= LSCHED_MIG_KINDS; k++)
    if (strcasecmp(profile, lsched_mig_kind_name(k)) == 0)
      return lsched_mig_model_profile(m, k);
  return NULL;
}

int lsched_mig_use_builtin(lsched_cluster *c, int model, const char *name) {
  if (!c)
    return LSCHED_EINVAL;
  const char *own = lsched_cluster_model_name(c, model);
  if (!own) {
    snprintf(c->errmsg, sizeof c->errmsg,
             "mig_use_builtin: %d is not a GPU model id of this cluster",
             model);
    return LSCHED_ENOENT;
  }
  const char *want = name ? name : own;
  const lsched_mig_model *m = lsched_mig_builtin_model(want);
  if (!m) {
    snprintf(c->errmsg, sizeof c->errmsg,
             "mig_use_builtin: '%s' is not a MIG model the library knows "
             "(give its memory with lsched_mig_set_model_memory)",
             want);
    return LSCHED_ENOENT;
  }
  int64_t mem[LSCHED_MIG_KINDS] = {0};
  for (int k = 1; k <= LSCHED_MIG_KINDS; k++) {
    const lsched_mig_profile *p = lsched_mig_model_profile(m, k);
    mem[k - 1] = p ? p->memory_mib : 0;
  }
  return lsched_mig_set_model_memory(c, model, mem);
}
