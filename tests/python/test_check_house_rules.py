"""scripts/check-house-rules finds what it is meant to find.

A small synthetic tree with one violation of each kind must be reported
line by line (so the checker cannot silently pass everything), a clean
tree must pass, and this checkout must pass.  Standard library only: the
meson unit suite runs this file directly with python3, pytest collects it
too.
"""
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "check-house-rules"

BAD_C = """\
#include "y/y_int.h"
#include "../y/y_int.h"
#include <stdio.h>
#define MAKE(name) int name(void) { return 0; }
#define MAKE_STATIC(name) static int name(void) { return 0; }
MAKE(made_public)
MAKE_STATIC(made_private)
int counter = 0;
static int hidden;
void (*hook)(int);
int prototype_only(int a);
int helper(int a) {
    printf("hi\\n");               /* printf( in a comment is fine */
    char *p = malloc(3);
    free(p);
    if (a) abort();
    fprintf(stderr, "x");
    return snprintf(0, 0, "%d", a);
}
int df_is_gone(const df_error *err) { return strstr(err->message, "gone") != 0; }
static int quiet(void) { return 0; }
int df_fine(void) { return quiet(); }
int df__fine_too;
"""
# A comment citing an outside document (split so this file does not cite one).
BAD_C += "/* as the core" + "-spec " + "4.2 says */\n"


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def run(root):
    out = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    return out.returncode, out.stdout


class SyntheticTree(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        # Two known modules: columnar may use common only.
        write(self.root, "src/common/common.h", "int df_common(void);\n")
        write(self.root, "src/common/common_int.h", "int df__common(void);\n")
        write(self.root, "src/columnar/columnar.c", '#include "common/common.h"\nint df_columnar;\n')

    def tearDown(self):
        self.tmp.cleanup()

    def test_clean_tree_passes(self):
        rc, out = run(self.root)
        self.assertEqual(rc, 0, out)
        self.assertIn("house rules: ok", out)

    def test_every_violation_is_reported(self):
        write(self.root, "src/x/x.c", BAD_C)
        write(self.root, "src/x/x.h", "int df_fine(void);\n")  # the door: df_fine is public, df_is_gone is not
        write(self.root, "src/y/y_int.h", "int df__y(void);\n")
        write(self.root, "src/common/uses_columnar.c", '#include "columnar/columnar.h"\n')
        write(self.root, "programs/tool/main.c", '#include "common/common_int.h"\n')
        write(self.root, "tests/unit/test_common.c", '#include "common/common_int.h"\n')
        write(self.root, "src/mssql/mssql_int.h", "int df__mssql(void);\n")
        write(self.root, "src/mssql/mssql.c", '#include "mssql_int.h"\n')
        write(self.root, "programs/mssql-peer/peer.c", '#include "mssql/mssql_int.h"\n')
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        lines = out.splitlines()

        def reported(prefix, *words):
            return any(l.startswith(prefix) and all(w in l for w in words) for l in lines)

        expected = [
            ("src/x/x.c:1:", "private", "y/y_int.h"),
            ("src/x/x.c:2:", "private", "../y/y_int.h"),
            ("src/x/x.c:6:", "prefix", "`made_public`"),
            ("src/x/x.c:8:", "prefix", "`counter`"),
            ("src/x/x.c:10:", "prefix", "`hook`"),
            ("src/x/x.c:12:", "prefix", "`helper`"),
            ("src/x/x.c:13:", "banned", "printf()"),
            ("src/x/x.c:14:", "banned", "malloc()"),
            ("src/x/x.c:15:", "banned", "free()"),
            ("src/x/x.c:16:", "banned", "abort()"),
            ("src/x/x.c:17:", "banned", "stderr"),
            ("src/x/x.c:20:", "message", "strstr()"),
            ("src/x/x.c:20:", "tiers", "`df_is_gone`"),
            ("src/x/x.c:24:", "citation", "-spec"),
            ("src/common/uses_columnar.c:1:", "layering", "src/common/ must not depend on src/columnar/"),
            ("src/x:", "layering", "not in the module graph"),
            ("src/y:", "layering", "not in the module graph"),
            ("programs/tool/main.c:1:", "private", "common/common_int.h"),
        ]
        for prefix, *words in expected:
            self.assertTrue(reported(prefix, *words), f"not reported: {prefix} {words}\n{out}")
        # Exactly those: nothing about static, prefixed, snprintf, prototypes,
        # the tests or the mssql peer.
        self.assertEqual(len([l for l in lines if not l.startswith("house rules:")]), len(expected), out)
        for quiet in ("made_private", "hidden", "quiet", "df_fine", "prototype_only", "snprintf",
                      "tests/", "mssql-peer"):
            self.assertNotIn(quiet, out)
        self.assertIn("house rules: 18 violation(s)", out)


class ThisCheckout(unittest.TestCase):
    def test_passes(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
