/*
 * View helpers: compact native symbols (the reference implementation's
 * Rust examples plus C and C++ cases), mapping basenames, source-path
 * normalisation, and the terminal / JSON / HTML escapes.
 */
#include "report_test_util.h"

static void check_compact(const char *in, const char *want) {
    df_buf b;
    df_buf_init(&b, 0);
    if (df__report_compact_symbol(in, strlen(in), &b) != DF_OK) df_test_fail(__FILE__, __LINE__, "out of memory");
    const char *got = b.data ? b.data : "";
    if (strcmp(got, want) != 0) df_test_fail(__FILE__, __LINE__, "compact(%s) = \"%s\", expected \"%s\"", in, got, want);
    df_buf_free(&b);
}

DF_TEST(compact_symbols_reference_examples) {
    check_compact("<tokio::runtime::blocking::task::BlockingTask<F> as core::future::Future>::poll", "BlockingTask::poll");
    check_compact("futures_util::future::future::map::Map<Fut, F>::poll", "Map::poll");
    check_compact("<delta_funnel::orchestrator::runtime::DeltaFunnelRuntime>::preview_table",
                  "DeltaFunnelRuntime::preview_table");
    check_compact("delta_funnel::session::build_preview::{closure#0}", "build_preview::{closure#0}");
    check_compact("delta_funnel::report::finish::<alloc::string::String> (.llvm.1234)", "report::finish");
    check_compact("pyo3::impl_::trampoline::do_call<Result, Handler>", "trampoline::do_call");
    check_compact("std::ostream::operator<<(int)", "ostream::operator<<");
    check_compact("std::strong_ordering::operator<=>(int)", "strong_ordering::operator<=>");
    check_compact("perfetto::ipc::ClientImpl::BeginInvoke(unsigned int, std::__1::basic_string<char> const&, bool)",
                  "ClientImpl::BeginInvoke");
    check_compact("functor::Callable::operator()(int)", "Callable::operator()");
    check_compact("std::sys::backtrace::__rust_begin_short_backtrace::<fn() -> core::result::Result<(), E>, ()>",
                  "backtrace::__rust_begin_short_backtrace");
    check_compact("delta_funnel::operator<Profile>", "delta_funnel::operator");
    check_compact("do_call<Result, Handler>", "do_call");
    check_compact("sqlite3_step", "sqlite3_step");
    check_compact("<invalid>", "<invalid>");
}

DF_TEST(compact_symbols_c_cases) {
    check_compact("df_parquet_decode_page", "df_parquet_decode_page");
    check_compact("decode_plain.constprop.0", "decode_plain");
    check_compact("inflate_fast.isra.0", "inflate_fast");
    check_compact("scan_rows.part.3", "scan_rows");
    check_compact("copy_rows.cold", "copy_rows");
    check_compact("hash_batch.lto_priv.0", "hash_batch");
    check_compact("__memmove_avx_unaligned_erms", "__memmove_avx_unaligned_erms");
    check_compact("[unresolved]", "[unresolved]");
    check_compact("", "");
}

DF_TEST(compact_symbols_cpp_cases) {
    check_compact("std::vector<int, std::allocator<int> >::push_back(int const&)", "vector::push_back");
    check_compact("std::_Hashtable<K, V>::_M_find_before_node(unsigned long, K const&, unsigned long) const",
                  "_Hashtable::_M_find_before_node");
    check_compact("void std::sort<int*>(int*, int*)", "std::sort");
    check_compact("ns::Widget::~Widget()", "Widget::~Widget");
    check_compact("operator new(unsigned long)", "operator new");
    check_compact("ns::Ptr<T>::operator->() const", "Ptr::operator->");
    check_compact("ns::Vec::operator[](unsigned long)", "Vec::operator[]");
    check_compact("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper");
    check_compact("duckdb::PhysicalHashAggregate::Sink(duckdb::ExecutionContext&, duckdb::DataChunk&) const",
                  "PhysicalHashAggregate::Sink");
    check_compact("arrow::compute::internal::(anonymous namespace)::SumImpl<arrow::Int64Type>::Consume(KernelContext*)",
                  "SumImpl::Consume");
}

static void check_source(const char *in, const char *want) {
    df_buf b;
    df_buf_init(&b, 0);
    bool keep = df__report_source_path(in, strlen(in), &b);
    if (!want) {
        if (keep) df_test_fail(__FILE__, __LINE__, "source(%s) kept \"%s\", expected dropped", in, b.data);
    } else if (!keep || strcmp(b.data, want) != 0) {
        df_test_fail(__FILE__, __LINE__, "source(%s) = \"%s\", expected \"%s\"", in, keep ? b.data : "(dropped)", want);
    }
    df_buf_free(&b);
}

DF_TEST(source_path_normalisation_table) {
    check_source("/home/u/repo/crates/x/src/query.rs", "src/query.rs");
    check_source("crates/x/src/query.rs", "crates/x/src/query.rs");
    check_source("private/build/query.rs", "query.rs");
    check_source("C:relative.rs", NULL);
    check_source("/usr/lib/libdelta.so", "libdelta.so");
    check_source("~user", NULL);
    check_source("/srv/checkout/src/parquet/decode.c", "src/parquet/decode.c");
    check_source("/srv/checkout/tests/unit/x.c", "tests/unit/x.c");
    check_source("../src/common/json.c", "json.c");
    check_source("build/../src/a.c", "a.c");
    check_source("/a/src/./b.c", "b.c");
    check_source("", NULL);
    check_source("/", NULL);
}

DF_TEST(module_names) {
    size_t off, n;
    const char *p = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    df__report_module_name(p, strlen(p), &off, &n);
    DF_ASSERT_EQ_UINT(n, 9);
    DF_ASSERT(memcmp(p + off, "libc.so.6", 9) == 0);
    p = "[vdso]";
    df__report_module_name(p, strlen(p), &off, &n);
    DF_ASSERT_EQ_UINT(n, 6);
    p = "C:";
    df__report_module_name(p, strlen(p), &off, &n);
    DF_ASSERT_EQ_UINT(n, 0);
    p = "/dir/";
    df__report_module_name(p, strlen(p), &off, &n);
    DF_ASSERT_EQ_UINT(n, 0);
    char longname[400];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    df__report_module_name(longname, strlen(longname), &off, &n);
    DF_ASSERT_EQ_UINT(n, 255);
}

static void check_term(const char *in, const char *want) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__report_term_escape(&b, in, strlen(in)), NULL);
    DF_ASSERT_EQ_STR(b.data ? b.data : "", want);
    df_buf_free(&b);
}

DF_TEST(terminal_escaping) {
    check_term("plain text", "plain text");
    check_term("a\"b\\c", "a\\\"b\\\\c");
    check_term("\x1b[31mred", "\\u{1B}[31mred");
    check_term("line\u2028sep", "line\\u{2028}sep");
    check_term("rtl\u202Eevil", "rtl\\u{202E}evil");
    check_term("zero\u200Bwidth\uFEFF", "zero\\u{200B}width\\u{FEFF}");
    check_term("tab\tnl\n", "tab\\u{9}nl\\u{A}");
    check_term("caf\xC3\xA9", "caf\xC3\xA9");
    check_term("\xC2\x85next", "\\u{85}next");
}

DF_TEST(json_and_html_escaping) {
    df_buf b;
    df_buf_init(&b, 0);
    const char *evil = "</script><img src=x onerror=alert(1)>&\u2028\u2029\"\\\n";
    DF_ASSERT_OK(df__report_json_string(&b, evil, strlen(evil)), NULL);
    DF_ASSERT_EQ_STR(b.data, "\"\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\\u0026\\u2028\\u2029\\\"\\\\\\n\"");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__report_html_escape(&b, "<a href=\"x\">'&'</a>", 20), NULL);
    DF_ASSERT_EQ_STR(b.data, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    df_buf_free(&b);
}

DF_TEST(interning_repairs_untrusted_bytes) {
    df_report_strings s;
    df__report_strings_init(&s);
    uint32_t a = df__report_intern(&s, "abc", 3), b = df__report_intern(&s, "abc", 3);
    DF_ASSERT_EQ_UINT(a, b);
    uint32_t bad = df__report_intern(&s, "x\xff" "y\0z", 5);
    DF_ASSERT(bad != 0);
    DF_ASSERT_EQ_STR(df__report_str(&s, bad), "x\xEF\xBF\xBDy\xEF\xBF\xBDz");
    uint32_t empty = df__report_intern(&s, "", 0);
    DF_ASSERT(empty != 0 && empty != a);
    DF_ASSERT_EQ_STR(df__report_str(&s, empty), "");
    DF_ASSERT(df__report_str(&s, 0) == NULL);
    df__report_strings_free(&s);
}

DF_TEST(error_kinds) {
    df_error err = {0};
    DF_ASSERT_KIND(df__report_fail(&err, DF_ERR_INVALID_ARTIFACT_MAGIC, "input", "file is not a %s", "profile"),
                   DF_ERR_INVALID_ARTIFACT_MAGIC);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "invalid_artifact_magic");
    DF_ASSERT_EQ_STR(err.phase, "input");
    DF_ASSERT_EQ_STR(err.origin, "report");
    DF_ASSERT_EQ_STR(err.message, "file is not a profile");
    DF_ASSERT(err.context == NULL); /* the kind says it: no {"reason": ...} duplicate */
    df_error_clear(&err);
    /* Without an error to fill, the kind is still returned. */
    DF_ASSERT_KIND(df__report_fail(NULL, DF_ERR_TRUNCATED_ARTIFACT, "input", "short"), DF_ERR_TRUNCATED_ARTIFACT);
}
