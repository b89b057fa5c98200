/*
 * delta-funnel-tracebox: the program the diagnostics guide checks with
 * `"$perfetto_assets/delta-funnel-tracebox" --version`.
 *
 * The reference ships a launcher for a pinned Perfetto tracebox build that
 * runs traced, traced_probes and traced_perf beside the workload.  Delta
 * Funnel records its traces in-process (its own sampler and trace writer),
 * so there is no daemon to launch; this program answers the guide's check
 * with the version and says so, and refuses anything else with the way to
 * capture instead.  It links nothing, so it works before anything else of
 * the package has been loaded.
 */

#include <stdio.h>
#include <string.h>

#ifndef DF_VERSION_STRING
#error "DF_VERSION_STRING must be defined by the build"
#endif

static const char ABOUT[] =
    "Delta Funnel records Perfetto traces in-process: no tracebox, traced, traced_probes or\n"
    "traced_perf daemon is started, and none is needed.  To capture:\n"
    "  - one operation from Python: ranked_profile=deltafunnel.RankedProfileConfig(\"query.profile.html\")\n"
    "  - a whole process: \"$perfetto_assets/capture-workload\" --output query.pftrace -- python app.py\n"
    "See docs/diagnostics.md.\n";

int main(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-v"))) {
        printf("delta-funnel-tracebox %s (Delta Funnel %s): captures run in-process\n", DF_VERSION_STRING,
               DF_VERSION_STRING);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: delta-funnel-tracebox --version\n\n%s", ABOUT);
        return 0;
    }
    fprintf(stderr, "delta-funnel-tracebox: only --version and --help are supported.\n%s", ABOUT);
    return 2;
}
