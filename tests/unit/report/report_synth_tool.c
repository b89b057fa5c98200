/*
 * Writes a synthetic scenario trace for the pytest and benchmark suites:
 *
 *   report_synth_tool SCENARIO OUT.pftrace
 *   report_synth_tool large OUT.pftrace OPS ACTIVITIES SAMPLES THREADS DEPTH FUNCTIONS
 *
 * Scenarios: preview, write_all, incomplete, scoped, ambiguous, truncated,
 * missing_identity, empty (see report_scenarios.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_scenarios.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SCENARIO OUT.pftrace | large OUT OPS ACTIVITIES SAMPLES THREADS DEPTH FUNCTIONS\n", argv[0]);
        return 64;
    }
    synth *s;
    if (!strcmp(argv[1], "large")) {
        if (argc != 9) {
            fprintf(stderr, "large needs OPS ACTIVITIES SAMPLES THREADS DEPTH FUNCTIONS\n");
            return 64;
        }
        s = scenario_large((uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]), strtoull(argv[5], NULL, 10),
                           (uint32_t)atoi(argv[6]), (uint32_t)atoi(argv[7]), (uint32_t)atoi(argv[8]));
    } else {
        s = scenario_by_name(argv[1]);
    }
    if (!s) {
        fprintf(stderr, "unknown scenario %s\n", argv[1]);
        return 64;
    }
    int rc = synth_save(s, argv[2]) == 0 ? 0 : 73;
    if (rc) fprintf(stderr, "cannot write %s\n", argv[2]);
    synth_free(s);
    return rc;
}
