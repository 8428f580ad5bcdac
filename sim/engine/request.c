/* Job record -> libsched request (request.h). */
#include "request.h"

void sim_job_request(const job_record *jr, uint64_t model_mask,
                     lsched_request *r) {
  lsched_request init = LSCHED_REQUEST_INIT;
  *r = init;
  r->cpu_milli = jr->cpu_milli;
  r->memory_mib = jr->memory_mib;
  r->gpu_count = jr->num_gpu > 0 ? jr->num_gpu : 0;
  r->gpu_milli = jr->num_gpu > 0 ? jr->gpu_milli : 0;
  r->model_mask = jr->num_gpu > 0 && jr->gpu_spec >= 0 ? model_mask : 0;
  r->priority = jr->qos;
}
