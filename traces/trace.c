/* placeholder: replaced by the traces implementation */
#include "trace.h"
