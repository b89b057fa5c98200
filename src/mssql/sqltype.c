/*
 * SQL Server column types as text ("decimal(10,2)") and as bulk-load
 * TYPE_INFO.  Parsing is case-insensitive and tolerates spaces; it is used
 * by the loader (planned columns), by tests and by the peer's catalog.
 */
#include "mssql/mssql_int.h"

#include <stdio.h>
#include <stdlib.h>

static const struct {
    const char *name;
    df_mssql_sqltype type;
} type_names[] = {
    {"bit", DF_MSSQL_BIT}, {"tinyint", DF_MSSQL_TINYINT}, {"smallint", DF_MSSQL_SMALLINT}, {"int", DF_MSSQL_INT},
    {"integer", DF_MSSQL_INT}, {"bigint", DF_MSSQL_BIGINT}, {"real", DF_MSSQL_REAL}, {"float", DF_MSSQL_FLOAT},
    {"decimal", DF_MSSQL_DECIMAL}, {"dec", DF_MSSQL_DECIMAL}, {"numeric", DF_MSSQL_NUMERIC},
    {"money", DF_MSSQL_MONEY}, {"smallmoney", DF_MSSQL_SMALLMONEY}, {"date", DF_MSSQL_DATE},
    {"time", DF_MSSQL_TIME}, {"datetime2", DF_MSSQL_DATETIME2}, {"datetimeoffset", DF_MSSQL_DATETIMEOFFSET},
    {"datetime", DF_MSSQL_DATETIME}, {"smalldatetime", DF_MSSQL_SMALLDATETIME},
    {"uniqueidentifier", DF_MSSQL_UNIQUEIDENTIFIER}, {"char", DF_MSSQL_CHAR}, {"varchar", DF_MSSQL_VARCHAR},
    {"nchar", DF_MSSQL_NCHAR}, {"nvarchar", DF_MSSQL_NVARCHAR}, {"binary", DF_MSSQL_BINARY},
    {"varbinary", DF_MSSQL_VARBINARY}, {"sysname", DF_MSSQL_NVARCHAR},
};

static const char *type_name(df_mssql_sqltype t) {
    for (size_t i = 0; i < DF_ARRAY_LEN(type_names); i++)
        if (type_names[i].type == t && strcmp(type_names[i].name, "integer") && strcmp(type_names[i].name, "dec") &&
            strcmp(type_names[i].name, "sysname"))
            return type_names[i].name;
    return "?";
}

static df_errkind bad_type(df_error *err, const char *why) {
    return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "invalid SQL Server type: %s", why);
}

/* Parses "(a[,b])" or "(max)" after the name; *na = number of arguments, -1 values for max. */
static df_errkind parse_args(const char *p, long args[2], int *na, df_error *err) {
    *na = 0;
    while (*p == ' ') p++;
    if (!*p) return DF_OK;
    if (*p != '(') return bad_type(err, "unexpected text after the type name");
    p++;
    for (;;) {
        while (*p == ' ') p++;
        if (*na == 2) return bad_type(err, "too many arguments");
        if (!df_ascii_ncasecmp(p, "max", 3)) {
            args[(*na)++] = -1;
            p += 3;
        } else {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v > 100000) return bad_type(err, "bad argument");
            args[(*na)++] = v;
            p = end;
        }
        while (*p == ' ') p++;
        if (*p == ',') { p++; continue; }
        if (*p == ')') { p++; break; }
        return bad_type(err, "unterminated argument list");
    }
    while (*p == ' ') p++;
    if (*p) return bad_type(err, "unexpected text after the arguments");
    return DF_OK;
}

df_errkind df_mssql_type_parse(const char *text, df_mssql_column *col, df_error *err) {
    while (*text == ' ') text++;
    size_t n = 0;
    while ((text[n] >= 'a' && text[n] <= 'z') || (text[n] >= 'A' && text[n] <= 'Z') || (text[n] >= '0' && text[n] <= '9'))
        n++;
    df_mssql_sqltype t = 0;
    for (size_t i = 0; i < DF_ARRAY_LEN(type_names); i++)
        if (strlen(type_names[i].name) == n && !df_ascii_ncasecmp(text, type_names[i].name, n)) t = type_names[i].type;
    if (!t) return bad_type(err, "unknown type name");
    long a[2] = {0, 0};
    int na;
    DF_TRY(parse_args(text + n, a, &na, err));
    bool sysname = n == 7 && !df_ascii_ncasecmp(text, "sysname", 7);
    col->type = t;
    col->length = 0;
    col->precision = 0;
    col->scale = 0;
    switch (t) {
    case DF_MSSQL_DECIMAL: case DF_MSSQL_NUMERIC:
        col->precision = na >= 1 ? (uint8_t)DF_MIN(a[0], 255) : 18;
        col->scale = na >= 2 ? (uint8_t)DF_MIN(a[1], 255) : 0;
        if (na >= 1 && (a[0] < 1 || a[0] > 38)) return bad_type(err, "decimal precision must be 1..38");
        if (col->scale > col->precision) return bad_type(err, "decimal scale exceeds precision");
        break;
    case DF_MSSQL_FLOAT:
        if (na >= 1 && (a[0] < 1 || a[0] > 53)) return bad_type(err, "float precision must be 1..53");
        if (na >= 1 && a[0] <= 24) col->type = DF_MSSQL_REAL;
        break;
    case DF_MSSQL_TIME: case DF_MSSQL_DATETIME2: case DF_MSSQL_DATETIMEOFFSET:
        col->scale = na >= 1 ? (uint8_t)DF_MIN(a[0], 255) : 7;
        if (col->scale > 7) return bad_type(err, "fractional-second precision must be 0..7");
        break;
    case DF_MSSQL_CHAR: case DF_MSSQL_VARCHAR: case DF_MSSQL_BINARY: case DF_MSSQL_VARBINARY:
    case DF_MSSQL_NCHAR: case DF_MSSQL_NVARCHAR: {
        bool national = t == DF_MSSQL_NCHAR || t == DF_MSSQL_NVARCHAR;
        long len = sysname ? 128 : na >= 1 ? a[0] : 1;
        if (len == -1 && (t == DF_MSSQL_CHAR || t == DF_MSSQL_NCHAR || t == DF_MSSQL_BINARY))
            return bad_type(err, "max is only valid for varying types");
        if (len == 0 || len > (national ? 4000 : 8000)) return bad_type(err, "length out of range");
        col->length = (int32_t)len;
        break;
    }
    default:
        if (na) return bad_type(err, "this type takes no arguments");
    }
    return DF_OK;
}

df_errkind df_mssql_type_render(const df_mssql_column *col, df_buf *out, df_error *err) {
    const char *name = type_name(col->type);
    switch (col->type) {
    case DF_MSSQL_DECIMAL: case DF_MSSQL_NUMERIC:
        return df_buf_printf(out, err, "%s(%u,%u)", name, col->precision, col->scale);
    case DF_MSSQL_FLOAT:
        return df_buf_printf(out, err, "float(53)");
    case DF_MSSQL_TIME: case DF_MSSQL_DATETIME2: case DF_MSSQL_DATETIMEOFFSET:
        return df_buf_printf(out, err, "%s(%u)", name, col->scale);
    case DF_MSSQL_CHAR: case DF_MSSQL_VARCHAR: case DF_MSSQL_NCHAR: case DF_MSSQL_NVARCHAR:
    case DF_MSSQL_BINARY: case DF_MSSQL_VARBINARY:
        if (col->length < 0) return df_buf_printf(out, err, "%s(max)", name);
        return df_buf_printf(out, err, "%s(%d)", name, col->length);
    default:
        return df_buf_append_str(out, name, err);
    }
}

df_errkind df__mssql_column_typeinfo(const df_mssql_column *col, df__tds_typeinfo *ti, df_error *err) {
    memset(ti, 0, sizeof *ti);
    ti->size_class = TDS_SC_BYTELEN;
    switch (col->type) {
    case DF_MSSQL_BIT: ti->type = TDS_T_BITN; ti->max_len = 1; break;
    case DF_MSSQL_TINYINT: ti->type = TDS_T_INTN; ti->max_len = 1; break;
    case DF_MSSQL_SMALLINT: ti->type = TDS_T_INTN; ti->max_len = 2; break;
    case DF_MSSQL_INT: ti->type = TDS_T_INTN; ti->max_len = 4; break;
    case DF_MSSQL_BIGINT: ti->type = TDS_T_INTN; ti->max_len = 8; break;
    case DF_MSSQL_REAL: ti->type = TDS_T_FLTN; ti->max_len = 4; break;
    case DF_MSSQL_FLOAT: ti->type = TDS_T_FLTN; ti->max_len = 8; break;
    case DF_MSSQL_MONEY: ti->type = TDS_T_MONEYN; ti->max_len = 8; break;
    case DF_MSSQL_SMALLMONEY: ti->type = TDS_T_MONEYN; ti->max_len = 4; break;
    case DF_MSSQL_DECIMAL: case DF_MSSQL_NUMERIC:
        if (col->precision < 1 || col->precision > 38 || col->scale > col->precision)
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "decimal(%u,%u) is not a valid type", col->precision, col->scale);
        ti->type = col->type == DF_MSSQL_DECIMAL ? TDS_T_DECIMALN : TDS_T_NUMERICN;
        ti->max_len = 1 + df__tds_dec_len(col->precision);
        ti->precision = col->precision;
        ti->scale = col->scale;
        break;
    case DF_MSSQL_DATE: ti->type = TDS_T_DATEN; ti->max_len = 3; break;
    case DF_MSSQL_TIME: case DF_MSSQL_DATETIME2: case DF_MSSQL_DATETIMEOFFSET:
        if (col->scale > 7) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "time scale %u is above 7", col->scale);
        ti->type = col->type == DF_MSSQL_TIME ? TDS_T_TIMEN : col->type == DF_MSSQL_DATETIME2 ? TDS_T_DATETIME2N
                                                                                               : TDS_T_DATETIMEOFFSETN;
        ti->scale = col->scale;
        ti->max_len = df__tds_time_len(col->scale) + (col->type == DF_MSSQL_TIME ? 0 : 3) +
                      (col->type == DF_MSSQL_DATETIMEOFFSET ? 2 : 0);
        break;
    case DF_MSSQL_DATETIME: ti->type = TDS_T_DATETIMN; ti->max_len = 8; break;
    case DF_MSSQL_SMALLDATETIME: ti->type = TDS_T_DATETIMN; ti->max_len = 4; break;
    case DF_MSSQL_UNIQUEIDENTIFIER: ti->type = TDS_T_GUID; ti->max_len = 16; break;
    case DF_MSSQL_CHAR: case DF_MSSQL_VARCHAR: case DF_MSSQL_NCHAR: case DF_MSSQL_NVARCHAR:
    case DF_MSSQL_BINARY: case DF_MSSQL_VARBINARY: {
        bool national = col->type == DF_MSSQL_NCHAR || col->type == DF_MSSQL_NVARCHAR;
        bool chars = national || col->type == DF_MSSQL_CHAR || col->type == DF_MSSQL_VARCHAR;
        bool fixed = col->type == DF_MSSQL_CHAR || col->type == DF_MSSQL_NCHAR || col->type == DF_MSSQL_BINARY;
        if (col->length == 0 || col->length < -1 || col->length > (national ? 4000 : 8000) || (fixed && col->length < 0))
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "column %s has an invalid length %d", col->name ? col->name : "", col->length);
        ti->type = col->type == DF_MSSQL_CHAR ? TDS_T_BIGCHAR : col->type == DF_MSSQL_VARCHAR ? TDS_T_BIGVARCHR
                 : col->type == DF_MSSQL_NCHAR ? TDS_T_NCHAR : col->type == DF_MSSQL_NVARCHAR ? TDS_T_NVARCHAR
                 : col->type == DF_MSSQL_BINARY ? TDS_T_BIGBINARY : TDS_T_BIGVARBIN;
        if (col->length < 0) {
            ti->plp = true;
            ti->size_class = TDS_SC_PLP;
            ti->max_len = 0xFFFF;
        } else {
            ti->size_class = TDS_SC_USHORTLEN;
            ti->max_len = (uint32_t)col->length * (national ? 2u : 1u);
        }
        if (chars) {
            ti->has_collation = true;
            memcpy(ti->collation, col->has_collation ? col->collation : df__mssql_default_collation, 5);
        }
        break;
    }
    default:
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "unknown SQL Server column type %d", (int)col->type);
    }
    return DF_OK;
}
