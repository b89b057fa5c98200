/*
 * Parquet schema -> Arrow schema.
 *
 * The flat, depth-first list of SchemaElements becomes a tree of Arrow
 * nodes (leaf, struct, list, map) following the Parquet LogicalTypes.md
 * rules, including the backward-compatibility rules for legacy lists
 * (2-level lists, repeated fields without a LIST annotation, `array` and
 * `<name>_tuple` element groups) and legacy MAP_KEY_VALUE maps, and the
 * type mapping pyarrow applies by default.
 *
 * Every node records the definition and repetition levels that assemble it
 * from a leaf's levels (see assemble.c):
 *   - a *slot* of the node exists for a level entry with rep <= slot_rep and
 *     def >= slot_def (slot_rep counts the lists above the node, slot_def is
 *     the definition level at which the innermost enclosing list element
 *     exists);
 *   - the slot is valid (non-null) when def >= def;
 *   - for lists and maps, an element exists when def >= elem_def; elements
 *     are the slots of the child, whose slot_rep is this node's slot_rep + 1.
 */
#ifndef DF_PARQUET_SCHEMA_MAP_H
#define DF_PARQUET_SCHEMA_MAP_H

#include "parquet/metadata.h"

/* How decoded physical values become the Arrow representation. */
typedef enum pq_conv {
    PQ_CONV_NONE = 0,       /* same bytes: bool, int32, int64, float, double, INT96 (as us), strings, FLBA */
    PQ_CONV_I32_TO_8,       /* int32 -> int8 / uint8 (truncate) */
    PQ_CONV_I32_TO_16,      /* int32 -> int16 / uint16 (truncate) */
    PQ_CONV_I32_TO_DEC,     /* int32 -> decimal128/256 (sign-extend) */
    PQ_CONV_I64_TO_DEC,     /* int64 -> decimal128/256 (sign-extend) */
    PQ_CONV_BE_TO_DEC,      /* big-endian two's complement bytes (FLBA or BYTE_ARRAY) -> decimal128/256 */
    PQ_CONV_TO_NULL,        /* NullType annotation: all values null, Arrow null type */
} pq_conv;

typedef enum pq_node_kind { PQ_NODE_LEAF, PQ_NODE_STRUCT, PQ_NODE_LIST, PQ_NODE_MAP } pq_node_kind;

typedef struct pq_node pq_node;
struct pq_node {
    pq_node_kind kind;
    df_field field;         /* Arrow name, type (one reference) and nullability */
    int16_t def;            /* definition level at which a slot is non-null */
    int16_t slot_def;       /* a slot exists when def >= slot_def ... */
    int16_t slot_rep;       /* ... and rep <= slot_rep */
    int16_t elem_def;       /* list/map: definition level at which an element exists */
    int32_t nchildren;      /* struct: fields; list: 1 (element); map: 2 (key, value) */
    pq_node *children;      /* owned array */
    int32_t leaf;           /* leaf index (PQ_NODE_LEAF), else -1 */
    int32_t first_leaf;     /* leaves of the subtree: [first_leaf, first_leaf + nleaves) */
    int32_t nleaves;
};

typedef struct pq_leaf {
    const pq_schema_element *elem;  /* the primitive schema element */
    char *path;             /* dotted Parquet path (owned) */
    int32_t field;          /* top-level Arrow field index */
    int16_t max_def;
    int16_t max_rep;
    int32_t physical;       /* df_parquet_physical */
    int32_t type_length;    /* FLBA width (0 otherwise) */
    df_type *type;          /* Arrow type of the leaf (borrowed from its node) */
    pq_conv conv;           /* physical -> Arrow conversion */
    pq_node *node;          /* its Arrow node (borrowed) */
} pq_leaf;

typedef struct pq_schema {
    pq_node root;           /* a struct node whose children are the top-level fields */
    pq_leaf *leaves;        /* owned array in file (depth-first) order */
    int32_t nleaves;
    df_schema *arrow;       /* the Arrow schema (one reference) */
} pq_schema;

/* Builds the tree, the leaves and the Arrow schema from the file's schema elements. */
df_errkind df__parquet_schema_build(const pq_schema_element *elems, uint32_t n, pq_schema *out, df_error *err);
void df__parquet_schema_free(pq_schema *s);

/*
 * Builds a pruned copy of `node` that keeps only leaves whose `keep[leaf]`
 * is true (maps keep both key and value when either is kept).  Returns
 * false in *kept when nothing under the node is kept (out is then empty).
 * The copy's types are new; leaf indices are preserved.
 */
df_errkind df__parquet_node_prune(const pq_node *node, const bool *keep, pq_node *out, bool *kept, df_error *err);
void df__parquet_node_clear(pq_node *node);

#endif
