/* The optional compiled twin of the max-min solver (smpy/lmm/maxmin.py; issues 23 and 24).
 *
 *   system_solve    smpy.lmm.maxmin.System.solve, with the general progressive filling of
 *                   System._component and System._solve_component (_start_filling,
 *                   _bounded_level, _saturated_level, _fix)
 *   system_variable System.variable's common case (``unique``, a tuple of uses, a positive
 *                   float penalty: the network model's flows); the other cases call the Python
 *                   method
 *   system_remove   System.remove
 *
 * The Python solver stays the reference (the pure path, used whenever this file cannot be
 * compiled, and with smpy/accel:off). This twin gives its results bit for bit: the same
 * components, seeds in the same order, the same rounds, the same IEEE double operations in the
 * same order (built with -ffp-contract=off), the same values stored in each variable's
 * ``value`` and the same list of changed variables in the same order
 * (tests/lmm/test_lmm_accel.py replays seeded random systems both ways, and whole runs).
 *
 * The Python solver's shortcuts (the lone-variable value, its cache, the class path of
 * components made of few classes of identical flows) are, by their own tests, the general
 * filling bit for bit: this twin takes the lone variable's value as Python computes it
 * (solve_lone: a variable alone on each of its constraints, the network's lone flow) and
 * otherwise runs the general filling, which in C is cheaper than the cache or the class path
 * in Python. It reads the Python objects' slots at their offsets (System, Constraint and
 * Variable use __slots__), copies one component at a time into C arrays (an adjacency list per constraint
 * in the order of its ``vars`` dict, one per variable in the order of its ``elements``), runs
 * the filling on doubles, and writes back the values (and the ``_mark`` slots the Python
 * component search sets, so the two paths can alternate on one system).
 *
 * At scale (thousands of flows in one component on a fat tree, re-solved at every flow's start
 * and end: issue 23's Figure 12 at 3072 ranks) the cost is reading the component, so: a
 * variable or constraint already met is found by its address (a pointer-keyed map with
 * Fibonacci hashing, emptied slot by slot), not by reading its object; the flows of one route share its tuple of
 * elements, read once per component; and the entries of each constraint's ``vars`` dict are
 * kept in C arrays from solve to solve, read again only when the dict's version tag changed
 * (CPython before 3.12; the dict itself otherwise). None of this changes an operation on the
 * doubles: the same components in the same order, the same filling. It does not maintain
 * the class path's bookkeeping of a filling (``_rem``, ``_use``, ``_nfree``, ``_fixed``): the
 * Python solver sets those afresh before reading them.
 *
 * Numbers are read as C doubles (the Python ints a caller might pass as a bound or a
 * coefficient convert exactly below 2**53). NaN capacities, penalties or bounds are not
 * supported by either path.
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"
#undef PyObject_IsTrue
#define PyObject_IsTrue(v) cext_truth(v)  /* exact lists, tuples, dicts by their length */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 + maxmin._EPS, as Python computes it (a double sum of two constants) */
static const double EPS1 = 1.0 + 1e-12;

static PyTypeObject *CnstType, *VarType, *KeyType;
static Py_ssize_t c_id, c_capacity, c_vars, c_mark, c_keys, c_sum, c_queued;
static Py_ssize_t v_id, v_penalty, v_bound, v_elements, v_value, v_mark, v_data, v_fixed, v_key;
static Py_ssize_t k_elements, k_penalty, k_bound;
static Py_ssize_t sy_solves, sy_mark, sy_next_id, sy_modified, sy_lonely, sy_keyring; /* System's slots */
static PyObject *py_variable, *py_remove; /* the Python methods (the cases not compiled) */
static PyObject *s_next_id, *s_keyring, *s_key_of, *s_keys, *s_sum, *s_key, *s_queued;
static PyObject *s_lonely, *s_modified, *s_mark, *s_solves, *s_id, *s_capacity, *s_vars, *s_penalty, *s_bound,
    *s_elements, *s_value;
static PyObject *f_zero, *i_one, *i_zero;

/* -- scratch arrays of one component (grown, never shrunk) ------------------------------ */
typedef struct {
    PyObject *obj; /* borrowed: the component's objects live in the system's dicts */
    double cap, rem, use;
    double lvl; /* rem / use, as Python computes it at each round (recomputed when they change) */
    int stale;
    Py_ssize_t nfree, adj0, adj1;
} Cn;

typedef struct {
    PyObject *obj;
    double pen, bound, x, blevel;
    Py_ssize_t adj0, adj1;
    int fixed;
    int src; /* where x comes from: 0 computed, 1 the bound object, 2 the constant 0.0 */
} Vr;

typedef struct {
    Py_ssize_t ix;
    double coeff;
} Edge;

typedef struct {
    Py_ssize_t ix;
    double x;
    int src;
} Fix;

static Cn *cn;
static Vr *vr;
static Edge *cadj, *vadj;
static Py_ssize_t *active, *bounded, *freev;
static Fix *tofix;
static Py_ssize_t ncn, nvr, ncadj, nvadj;
static Py_ssize_t cap_cn, cap_vr, cap_cadj, cap_vadj, cap_active, cap_bounded, cap_free, cap_tofix;

static int
grow(void **arr, Py_ssize_t *cap, Py_ssize_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    Py_ssize_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = PyMem_Realloc(*arr, (size_t)n * size);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *arr = p;
    *cap = n;
    return 0;
}

#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* -- object -> index of the current component (open addressing; emptied slot by slot) ------- */
typedef struct {
    PyObject *key; /* NULL: empty */
    Py_ssize_t val;
} Slot;

static Slot *tab;
static size_t tabsize, tabfill, *used; /* used[0:tabfill]: the filled slots, emptied by map_reset */
static unsigned tabshift;             /* tabsize = 2 ** (64 - tabshift) */

/* the slot of a key: Fibonacci hashing (the high bits of the product: the low bits of object
   addresses, spaced by their size class, are far from uniform) */
static inline size_t
hash_ptr(PyObject *p)
{
    return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL) >> tabshift);
}

static int
map_reset(void)
{
    if (tab == NULL) {
        tabsize = 1024;
        tabshift = 64 - 10;
        tab = PyMem_Calloc(tabsize, sizeof(Slot));
        used = PyMem_Malloc(tabsize / 2 * sizeof(size_t));
        if (tab == NULL || used == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    for (size_t k = 0; k < tabfill; k++)
        tab[used[k]].key = NULL;
    tabfill = 0;
    return 0;
}

/* the map's values: a variable's index j as 4 j, a constraint's i as 4 i + 1, and for a tuple
 * of elements already read in this component the start s of its adjacency list as 4 s + 2 */
#define VR_TAG(j) (4 * (j))
#define CN_TAG(i) (4 * (i) + 1)
#define SEG_TAG(s) (4 * (s) + 2)
#define KIND(t) ((t) & 3)
#define UNTAG(t) ((t) >> 2)

static int map_put(PyObject *key, Py_ssize_t val);

static int
map_grow(void)
{
    Slot *old = tab;
    size_t *oldused = used, n = tabfill;
    Slot *t = PyMem_Calloc(tabsize * 2, sizeof(Slot));
    size_t *u = PyMem_Malloc(tabsize * sizeof(size_t)); /* half the new size */
    if (t == NULL || u == NULL) {
        PyMem_Free(t);
        PyMem_Free(u);
        PyErr_NoMemory();
        return -1;
    }
    tab = t;
    used = u;
    tabsize *= 2;
    tabshift--;
    tabfill = 0;
    for (size_t k = 0; k < n; k++)
        map_put(old[oldused[k]].key, old[oldused[k]].val);
    PyMem_Free(old);
    PyMem_Free(oldused);
    return 0;
}

static int
map_put(PyObject *key, Py_ssize_t val)
{
    if (2 * (tabfill + 1) > tabsize && map_grow() < 0)
        return -1;
    size_t mask = tabsize - 1;
    size_t i = hash_ptr(key);
    while (tab[i].key != NULL) {
        if (tab[i].key == key) {
            tab[i].val = val;
            return 0;
        }
        i = (i + 1) & mask;
    }
    tab[i].key = key;
    tab[i].val = val;
    used[tabfill++] = i;
    return 0;
}

static inline Py_ssize_t
map_get(PyObject *key)
{
    size_t mask = tabsize - 1;
    size_t i = hash_ptr(key);
    PyObject *k;
    while ((k = tab[i].key) != NULL) {
        if (k == key)
            return tab[i].val;
        i = (i + 1) & mask;
    }
    return -1;
}

/* -- reading the Python objects -------------------------------------------------------- */
static inline int
as_double(PyObject *o, double *out)
{
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    *out = d;
    return 0;
}

/* a slot's value (borrowed), or NULL with AttributeError */
static inline PyObject *
slot(PyObject *o, Py_ssize_t off, PyObject *name)
{
    PyObject *v = SLOT(o, off);
    if (v == NULL)
        PyErr_SetObject(PyExc_AttributeError, name);
    return v;
}

/* whether o's _mark is the solve's mark (Python compares the ints: ``c._mark == mark``) */
static inline int
marked(PyObject *o, Py_ssize_t off, PyObject *mark, long long markval)
{
    PyObject *m = SLOT(o, off);
    if (m == mark)
        return 1;
    if (m == NULL || !PyLong_CheckExact(m))
        return 0;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(m, &overflow);
    return !overflow && x == markval;
}

static int
check_type(PyObject *o, PyTypeObject *tp)
{
    if (PyObject_TypeCheck(o, tp))
        return 0;
    PyErr_Format(PyExc_TypeError, "max-min solver: expected a %s, got %R", tp->tp_name, o);
    return -1;
}

/* a new constraint of the component; returns its index or -1 */
static Py_ssize_t
add_cn(PyObject *c, PyObject *mark)
{
    if (GROW(cn, cap_cn, ncn + 1) < 0)
        return -1;
    PyObject *cap = slot(c, c_capacity, s_capacity);
    if (cap == NULL)
        return -1;
    Cn *e = &cn[ncn];
    if (as_double(cap, &e->cap) < 0)
        return -1;
    e->obj = c;
    slot_set(c, c_mark, mark);
    if (map_put(c, CN_TAG(ncn)) < 0)
        return -1;
    return ncn++;
}

/* a new variable of the component, with its elements (constraints marked and added as met);
 * returns its index or -1 */
static Py_ssize_t
add_vr(PyObject *v, PyObject *mark)
{
    if (GROW(vr, cap_vr, nvr + 1) < 0)
        return -1;
    PyObject *pen = slot(v, v_penalty, s_penalty), *bound = slot(v, v_bound, s_bound);
    PyObject *elements = slot(v, v_elements, s_elements);
    if (pen == NULL || bound == NULL || elements == NULL)
        return -1;
    Py_ssize_t j = nvr;
    Vr *e = &vr[j];
    e->obj = v;
    if (as_double(pen, &e->pen) < 0 || as_double(bound, &e->bound) < 0)
        return -1;
    e->fixed = 0;
    e->src = 0;
    e->x = 0.0;
    slot_set(v, v_mark, mark);
    if (map_put(v, VR_TAG(j)) < 0)
        return -1;
    nvr++;
    PyObject **items;
    Py_ssize_t n;
    if (PyTuple_Check(elements)) {
        items = &PyTuple_GET_ITEM(elements, 0);
        n = PyTuple_GET_SIZE(elements);
        /* the flows of one route share its tuple (the network model's uses): read once per
           component, its constraints all met already; the variables share the list */
        Py_ssize_t seg = map_get(elements);
        if (seg >= 0 && KIND(seg) == 2) {
            vr[j].adj0 = UNTAG(seg);
            vr[j].adj1 = UNTAG(seg) + n;
            return j;
        }
        if (map_put(elements, SEG_TAG(nvadj)) < 0)
            return -1;
    }
    else if (PyList_Check(elements)) {
        items = ((PyListObject *)elements)->ob_item;
        n = PyList_GET_SIZE(elements);
    }
    else {
        PyErr_Format(PyExc_TypeError, "max-min solver: a variable's elements must be a tuple or list, got %R",
                     elements);
        return -1;
    }
    if (GROW(vadj, cap_vadj, nvadj + n) < 0)
        return -1;
    vr[j].adj0 = nvadj;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *pair = items[k];
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError, "max-min solver: an element must be (constraint, coefficient), got %R",
                         pair);
            return -1;
        }
        PyObject *c2 = PyTuple_GET_ITEM(pair, 0);
        double coeff;
        if (as_double(PyTuple_GET_ITEM(pair, 1), &coeff) < 0)
            return -1;
        Py_ssize_t ci = map_get(c2); /* a constraint met before: found by its address alone */
        if (ci >= 0 && KIND(ci) == 1)
            ci = UNTAG(ci);
        else if (check_type(c2, CnstType) < 0)
            return -1;
        else if (SLOT(c2, c_mark) == mark) {
            PyErr_SetString(PyExc_RuntimeError, "max-min solver: a marked constraint outside the component");
            return -1;
        }
        else if ((ci = add_cn(c2, mark)) < 0)
            return -1;
        vadj[nvadj].ix = ci;
        vadj[nvadj].coeff = coeff;
        nvadj++;
    }
    vr[j].adj1 = nvadj;
    return j;
}

#ifdef CEXT_DICT_VERSIONS
/* -- the entries of the constraints' ``vars`` dicts, kept from solve to solve ---------------
 * A large component is solved again and again with a few of its constraints modified: the
 * others' dicts are unchanged (the same ma_version_tag: a dict gets a new one, unique in the
 * process, at every change and at its creation, so an unchanged version also means that the
 * dict, which holds its keys, is the one read). Their variables and coefficients are read from
 * these arrays instead of the dicts. Borrowed: only compared and read while the dict is unchanged. */
typedef struct {
    PyObject *dict;
    uint64_t version;
    Py_ssize_t n, cap;
    PyObject **keys;
    double *coeffs;
} Entries;

static Entries *ents;
static size_t entsize, entfill;
#define ENT_MAX 65536 /* dicts remembered at most (then all forgotten) */

static void
ents_clear(void)
{
    for (size_t i = 0; i < entsize; i++) {
        PyMem_Free(ents[i].keys);
        PyMem_Free(ents[i].coeffs);
    }
    PyMem_Free(ents);
    ents = NULL;
    entsize = entfill = 0;
}

static Entries *
ents_slot(PyObject *d)
{
    if (entfill * 2 >= entsize) {
        if (entsize >= ENT_MAX)
            ents_clear();
        size_t oldsize = entsize, size = oldsize ? oldsize * 2 : 256;
        Entries *old = ents, *t = PyMem_Calloc(size, sizeof(Entries));
        if (t == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        ents = t;
        entsize = size;
        for (size_t i = 0; i < oldsize; i++)
            if (old[i].dict != NULL) {
                size_t k = ((uintptr_t)old[i].dict * 0x9E3779B97F4A7C15ULL) >> 40 & (size - 1);
                while (ents[k].dict != NULL)
                    k = (k + 1) & (size - 1);
                ents[k] = old[i];
            }
        PyMem_Free(old);
    }
    size_t k = ((uintptr_t)d * 0x9E3779B97F4A7C15ULL) >> 40 & (entsize - 1);
    while (ents[k].dict != NULL && ents[k].dict != d)
        k = (k + 1) & (entsize - 1);
    if (ents[k].dict == NULL) {
        ents[k].dict = d;
        ents[k].version = 0; /* no dict has version 0 once created: read it */
        entfill++;
    }
    return &ents[k];
}

/* the entries of ``vars`` (an exact dict), read again if it changed since */
static Entries *
entries_of(PyObject *vars)
{
    Entries *e = ents_slot(vars);
    if (e == NULL)
        return NULL;
    if (e->version == DICT_VERSION(vars) && e->version != 0)
        return e;
    Py_ssize_t n = PyDict_GET_SIZE(vars);
    if (n > e->cap) {
        Py_ssize_t cap = e->cap ? e->cap : 8;
        while (cap < n)
            cap *= 2;
        PyObject **k = PyMem_Realloc(e->keys, (size_t)cap * sizeof(PyObject *));
        if (k == NULL)
            return (Entries *)PyErr_NoMemory();
        e->keys = k;
        double *c = PyMem_Realloc(e->coeffs, (size_t)cap * sizeof(double));
        if (c == NULL)
            return (Entries *)PyErr_NoMemory();
        e->coeffs = c;
        e->cap = cap;
    }
    e->version = 0;
    uint64_t version = DICT_VERSION(vars);
    Py_ssize_t pos = 0, i = 0;
    PyObject *v, *coeff;
    while (PyDict_Next(vars, &pos, &v, &coeff) && i < n) {
        if (as_double(coeff, &e->coeffs[i]) < 0)
            return NULL;
        e->keys[i++] = v;
    }
    if (DICT_VERSION(vars) != version) { /* a coefficient's __float__ changed it */
        PyErr_SetString(PyExc_RuntimeError, "max-min solver: a constraint's vars changed while read");
        return NULL;
    }
    e->n = i;
    e->version = version;
    return e;
}
#endif

/* a variable of the component met on a constraint: its index (added if new); -1 on error */
static inline Py_ssize_t
var_index(PyObject *v, PyObject *mark)
{
    /* a variable met before is found by its address alone (not read: most entries of a large
       component are such, and reading each variable's object costs a cache miss) */
    Py_ssize_t j = map_get(v);
    if (j >= 0 && KIND(j) == 0)
        return UNTAG(j);
    if (check_type(v, VarType) < 0)
        return -1;
    if (SLOT(v, v_mark) == mark) {
        PyErr_SetString(PyExc_RuntimeError, "max-min solver: a marked variable outside the component");
        return -1;
    }
    return add_vr(v, mark);
}

/* System._component: the constraints and variables connected to ``seed`` (marked), in the
 * same order, with the adjacency lists */
static int
component(PyObject *seed, PyObject *mark)
{
    ncn = nvr = ncadj = nvadj = 0;
    if (map_reset() < 0 || add_cn(seed, mark) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < ncn; i++) {
        PyObject *vars = slot(cn[i].obj, c_vars, s_vars);
        if (vars == NULL)
            return -1;
        if (!PyDict_Check(vars)) {
            PyErr_Format(PyExc_TypeError, "max-min solver: a constraint's vars must be a dict, got %R", vars);
            return -1;
        }
        if (GROW(cadj, cap_cadj, ncadj + PyDict_GET_SIZE(vars)) < 0)
            return -1;
        cn[i].adj0 = ncadj;
#ifdef CEXT_DICT_VERSIONS
        if (PyDict_CheckExact(vars)) {
            Entries *e = entries_of(vars);
            if (e == NULL)
                return -1;
            PyObject **keys = e->keys; /* e stays put: component() alone reads the entries */
            const double *coeffs = e->coeffs;
            Py_ssize_t n = e->n;
            for (Py_ssize_t k = 0; k < n; k++) {
                if (k + 8 < n) /* the map's slot of a later entry */
                    __builtin_prefetch(&tab[hash_ptr(keys[k + 8])]);
                Py_ssize_t j = var_index(keys[k], mark);
                if (j < 0)
                    return -1;
                cadj[ncadj].ix = j;
                cadj[ncadj].coeff = coeffs[k];
                ncadj++;
            }
            cn[i].adj1 = ncadj;
            continue;
        }
#endif
        Py_ssize_t pos = 0;
        PyObject *v, *coeff;
        while (PyDict_Next(vars, &pos, &v, &coeff)) {
            Py_ssize_t j = var_index(v, mark);
            if (j < 0)
                return -1;
            double a;
            if (as_double(coeff, &a) < 0)
                return -1;
            cadj[ncadj].ix = j;
            cadj[ncadj].coeff = a;
            ncadj++;
        }
        cn[i].adj1 = ncadj;
    }
    return 0;
}

/* -- the filling (System._solve_component) ---------------------------------------------- */
/* the bounded variables' sort key, System._solve_component's (bound * penalty, id) */
typedef struct {
    double lv;
    long long id;
    Py_ssize_t ix;
} Bk;

static Bk *bkeys, *bktmp;
static Py_ssize_t cap_bkeys, cap_bktmp;

static inline int
bk_less(const Bk *a, const Bk *b)
{
    return a->lv < b->lv || (!(b->lv < a->lv) && a->id < b->id);
}

/* sorts a[0:n] (keys distinct: the ids are) by insertion in runs of 16, then bottom-up merges
   through tmp */
static void
sort_keys(Bk *a, Bk *tmp, Py_ssize_t n)
{
    const Py_ssize_t run = 16;
    for (Py_ssize_t lo = 0; lo < n; lo += run) {
        Py_ssize_t hi = lo + run < n ? lo + run : n;
        for (Py_ssize_t i = lo + 1; i < hi; i++) {
            Bk x = a[i];
            Py_ssize_t j = i;
            for (; j > lo && bk_less(&x, &a[j - 1]); j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
    }
    Bk *src = a, *dst = tmp;
    for (Py_ssize_t w = run; w < n; w *= 2) {
        for (Py_ssize_t lo = 0; lo < n; lo += 2 * w) {
            Py_ssize_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            Py_ssize_t i = lo, j = mid, k = lo;
            if (mid == hi || !bk_less(&src[mid], &src[mid - 1])) { /* already in order */
                memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(Bk));
                continue;
            }
            while (i < mid && j < hi)
                dst[k++] = bk_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        Bk *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof(Bk));
}

static inline int
ratio(const Cn *c, double *out)
{
    if (c->use == 0.0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
        return -1;
    }
    *out = c->rem / c->use;
    return 0;
}

/* _fix: returns how many were fixed */
static Py_ssize_t
fix(Py_ssize_t n)
{
    Py_ssize_t fixed = 0;
    for (Py_ssize_t t = 0; t < n; t++) {
        Vr *v = &vr[tofix[t].ix];
        if (v->fixed)
            continue;
        v->fixed = 1;
        double x = v->x = tofix[t].x;
        v->src = tofix[t].src;
        fixed++;
        double inv = 1.0 / v->pen;
        for (Py_ssize_t k = v->adj0; k < v->adj1; k++) {
            Cn *c = &cn[vadj[k].ix];
            double coeff = vadj[k].coeff;
            c->rem -= coeff * x;
            if (c->rem < 0.0)
                c->rem = 0.0;
            c->use -= coeff * inv;
            c->nfree -= 1;
            c->stale = 1;
        }
    }
    return fixed;
}

static int
fill(void)
{
    Py_ssize_t nfree = 0, nact = 0, nb = 0;
    if (GROW(freev, cap_free, nvr) < 0 || GROW(bounded, cap_bounded, nvr) < 0 ||
        GROW(active, cap_active, ncn) < 0 || GROW(tofix, cap_tofix, ncadj + nvr) < 0)
        return -1;
    /* _start_filling */
    for (Py_ssize_t j = 0; j < nvr; j++) {
        Vr *v = &vr[j];
        if (v->pen > 0.0) {
            v->fixed = 0;
            freev[nfree++] = j;
        }
        else {
            v->fixed = 1;
            v->x = 0.0;
            v->src = 2;
        }
    }
    for (Py_ssize_t i = 0; i < ncn; i++) {
        Cn *c = &cn[i];
        c->rem = c->cap;
        double use = 0.0;
        Py_ssize_t n = 0;
        for (Py_ssize_t k = c->adj0; k < c->adj1; k++) {
            const Vr *v = &vr[cadj[k].ix];
            if (!v->fixed) {
                use += cadj[k].coeff / v->pen;
                n++;
            }
        }
        c->use = use;
        c->nfree = n;
        c->stale = 1;
        if (use > 0.0)
            active[nact++] = i;
    }
    if (GROW(bkeys, cap_bkeys, nfree) < 0 || GROW(bktmp, cap_bktmp, nfree) < 0)
        return -1;
    for (Py_ssize_t f = 0; f < nfree; f++) {
        Vr *v = &vr[freev[f]];
        if (v->bound != Py_HUGE_VAL) {
            PyObject *id = slot(v->obj, v_id, s_id);
            if (id == NULL)
                return -1;
            long long vid = PyLong_AsLongLong(id);
            if (vid == -1 && PyErr_Occurred())
                return -1;
            v->blevel = v->bound * v->pen;
            bkeys[nb].lv = v->blevel;
            bkeys[nb].id = vid;
            bkeys[nb].ix = freev[f];
            nb++;
        }
    }
    if (nb > 1)
        sort_keys(bkeys, bktmp, nb);
    for (Py_ssize_t b = 0; b < nb; b++)
        bounded[b] = bkeys[b].ix;
    Py_ssize_t bi = 0, left = nfree;
    while (left) {
        double level = Py_HUGE_VAL;
        for (Py_ssize_t a = 0; a < nact; a++) {
            Cn *c = &cn[active[a]];
            if (c->stale) { /* Python divides at every round: the same quotient while rem and use stay */
                if (ratio(c, &c->lvl) < 0)
                    return -1;
                c->stale = 0;
            }
            if (c->lvl < level)
                level = c->lvl;
        }
        while (bi < nb && vr[bounded[bi]].fixed)
            bi++;
        Py_ssize_t nfix = 0;
        if (bi < nb && vr[bounded[bi]].bound * vr[bounded[bi]].pen <= level * EPS1) {
            /* _bounded_level */
            double blevel = vr[bounded[bi]].bound * vr[bounded[bi]].pen;
            while (bi < nb && vr[bounded[bi]].bound * vr[bounded[bi]].pen <= blevel * EPS1) {
                Vr *v = &vr[bounded[bi]];
                if (!v->fixed) {
                    tofix[nfix].ix = bounded[bi];
                    tofix[nfix].x = v->bound;
                    tofix[nfix].src = 1;
                    nfix++;
                }
                bi++;
            }
        }
        else if (level == Py_HUGE_VAL) { /* _saturated_level, no active constraint */
            for (Py_ssize_t f = 0; f < nfree; f++) {
                if (!vr[freev[f]].fixed) {
                    tofix[nfix].ix = freev[f];
                    tofix[nfix].x = Py_HUGE_VAL;
                    tofix[nfix].src = 0;
                    nfix++;
                }
            }
        }
        else { /* _saturated_level */
            double thresh = level * EPS1;
            for (Py_ssize_t a = 0; a < nact; a++) {
                const Cn *c = &cn[active[a]];
                if (!(c->lvl <= thresh))
                    continue;
                for (Py_ssize_t k = c->adj0; k < c->adj1; k++) {
                    const Vr *v = &vr[cadj[k].ix];
                    if (!v->fixed) {
                        double x = level / v->pen;
                        int src = 0;
                        if (x > v->bound) {
                            x = v->bound;
                            src = 1;
                        }
                        if (GROW(tofix, cap_tofix, nfix + 1) < 0)
                            return -1;
                        tofix[nfix].ix = cadj[k].ix;
                        tofix[nfix].x = x;
                        tofix[nfix].src = src;
                        nfix++;
                    }
                }
            }
        }
        left -= fix(nfix);
        Py_ssize_t keep = 0;
        for (Py_ssize_t a = 0; a < nact; a++)
            if (cn[active[a]].nfree > 0)
                active[keep++] = active[a];
        nact = keep;
    }
    return 0;
}

/* the values into the variables, the changed ones appended to ``changed`` (in component order) */
static int
store(PyObject *changed)
{
    for (Py_ssize_t j = 0; j < nvr; j++) {
        Vr *v = &vr[j];
        PyObject *old = SLOT(v->obj, v_value);
        double x0;
        if (old == NULL) {
            PyErr_SetObject(PyExc_AttributeError, s_value);
            return -1;
        }
        if (as_double(old, &x0) < 0)
            return -1;
        PyObject *nv;
        if (v->src == 1) {
            nv = slot(v->obj, v_bound, s_bound);
            if (nv == NULL)
                return -1;
            Py_INCREF(nv);
        }
        else if (v->src == 2)
            nv = Py_NewRef(f_zero);
        else if (PyFloat_CheckExact(old) && memcmp(&x0, &v->x, sizeof(double)) == 0 && x0 == v->x)
            nv = NULL; /* the same float, bit for bit: keep the object */
        else if ((nv = PyFloat_FromDouble(v->x)) == NULL)
            return -1;
        if (nv != NULL) {
            slot_set(v->obj, v_value, nv);
            Py_DECREF(nv);
        }
        double x = v->src == 0 ? v->x : v->src == 2 ? 0.0 : v->bound;
        if (x != x0 && PyList_Append(changed, v->obj) < 0)
            return -1;
    }
    return 0;
}

/* -- System.solve ------------------------------------------------------------------------ */
typedef struct {
    long long id;
    PyObject *c;
} Seed;

static int
cmp_seed(const void *a, const void *b)
{
    long long x = ((const Seed *)a)->id, y = ((const Seed *)b)->id;
    return x < y ? -1 : x > y;
}

static Seed *seeds;
static Py_ssize_t cap_seeds;

/* ``self._lonely``: the modified variables of no constraint, as Python does it */
static int
solve_lonely(PyObject *self, PyObject *changed)
{
    PyObject *lonely = slot(self, sy_lonely, s_lonely);
    if (lonely == NULL)
        return -1;
    if (PyList_CheckExact(lonely) && PyList_GET_SIZE(lonely) == 0)
        return 0;
    Py_INCREF(lonely);
    int truth = PyObject_IsTrue(lonely);
    if (truth <= 0) {
        Py_DECREF(lonely);
        return truth;
    }
    PyObject *it = PyObject_GetIter(lonely);
    Py_DECREF(lonely);
    if (it == NULL)
        return -1;
    PyObject *v;
    int rc = 0;
    while (rc == 0 && (v = PyIter_Next(it)) != NULL) {
        PyObject *elements = attr_get(v, s_elements);
        int has = elements == NULL ? -1 : PyObject_IsTrue(elements);
        Py_XDECREF(elements);
        if (has < 0)
            rc = -1;
        else if (!has) {
            PyObject *pen = attr_get(v, s_penalty);
            int pos = pen == NULL ? -1 : PyObject_RichCompareBool(pen, f_zero, Py_GT);
            Py_XDECREF(pen);
            PyObject *nv = pos < 0 ? NULL : pos ? attr_get(v, s_bound) : Py_NewRef(f_zero);
            PyObject *old = nv == NULL ? NULL : attr_get(v, s_value);
            int ne = old == NULL ? -1 : PyObject_RichCompareBool(nv, old, Py_NE);
            if (ne < 0 || (ne && (attr_set(v, s_value, nv) < 0 || PyList_Append(changed, v) < 0)))
                rc = -1;
            Py_XDECREF(nv);
            Py_XDECREF(old);
        }
        Py_DECREF(v);
    }
    Py_DECREF(it);
    if (rc < 0 || PyErr_Occurred())
        return -1;
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL)
        return -1;
    slot_set(self, sy_lonely, fresh);
    Py_DECREF(fresh);
    return 0;
}

/* ``self.name += 1`` (a slot at off); returns the new value (new reference) */
static PyObject *
increment(PyObject *self, Py_ssize_t off, PyObject *name)
{
    if (incr_in_place(SLOT(self, off)))  /* a counter no one else holds (solves) */
        return Py_NewRef(SLOT(self, off));
    PyObject *v = slot(self, off, name);
    if (v == NULL)
        return NULL;
    PyObject *w = plus_one(v, i_one);
    if (w != NULL)
        slot_set(self, off, w);
    return w;
}

/* seeds by id: an insertion sort for the few of a message (ids are distinct: any sort gives
   the same order) */
static void
sort_seeds(Seed *a, Py_ssize_t n)
{
    if (n > 16) {
        qsort(a, (size_t)n, sizeof(Seed), cmp_seed);
        return;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        Seed x = a[i];
        Py_ssize_t j = i;
        for (; j > 0 && a[j - 1].id > x.id; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/* a float object's value, or 0 when o is not an exact float */
static inline int
exact_float(PyObject *o, double *out)
{
    if (o == NULL || !PyFloat_CheckExact(o))
        return 0;
    *out = PyFloat_AS_DOUBLE(o);
    return 1;
}

/* System.solve's shortcut for a seed whose one variable is alone on each of its constraints
 * (the network's lone flow): System._solve_single with _lone_value, the general filling of a
 * one-variable component bit for bit (the level min_c C_c / (a_cv / w_v), the same bound test).
 * Marks the variable and its constraints, stores the value and appends the variable to
 * ``changed`` if it changed, as store() does. 1: done; 0: not this case (exact floats, a tuple
 * of elements, a positive penalty; nothing touched), the general path solves it; -1: error */
static int
solve_lone(PyObject *vars, PyObject *mark, PyObject *changed)
{
    if (!PyDict_CheckExact(vars) || PyDict_GET_SIZE(vars) != 1)
        return 0;
    Py_ssize_t pos = 0;
    PyObject *v, *coeff_o;
    if (!PyDict_Next(vars, &pos, &v, &coeff_o) || !Py_IS_TYPE(v, VarType))
        return 0;
    PyObject *elements = SLOT(v, v_elements), *bound_o = SLOT(v, v_bound);
    double pen, bound, x0;
    if (elements == NULL || !PyTuple_CheckExact(elements) || !exact_float(SLOT(v, v_penalty), &pen) ||
        !exact_float(bound_o, &bound) || !exact_float(SLOT(v, v_value), &x0) || !(pen > 0.0))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(elements);
    double level = INFINITY;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *pair = PyTuple_GET_ITEM(elements, k);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            return 0;
        PyObject *c = PyTuple_GET_ITEM(pair, 0), *cv;
        double coeff, cap;
        if (!Py_IS_TYPE(c, CnstType) || (cv = SLOT(c, c_vars)) == NULL || !PyDict_CheckExact(cv) ||
            PyDict_GET_SIZE(cv) != 1 || !exact_float(PyTuple_GET_ITEM(pair, 1), &coeff) ||
            !exact_float(SLOT(c, c_capacity), &cap))
            return 0;
        double use = coeff / pen;
        if (use > 0.0) {
            double lvl = cap / use;
            if (lvl < level)
                level = lvl;
        }
    }
    slot_set(v, v_mark, mark);
    for (Py_ssize_t k = 0; k < n; k++)
        slot_set(PyTuple_GET_ITEM(PyTuple_GET_ITEM(elements, k), 0), c_mark, mark);
    double x;
    PyObject *nv = NULL; /* the bound object itself when the value is the bound */
    if (bound != INFINITY && bound * pen <= level * EPS1)
        x = bound, nv = bound_o;
    else if (level == INFINITY)
        x = INFINITY;
    else if ((x = level / pen) > bound)
        x = bound, nv = bound_o;
    if (nv != NULL)
        Py_INCREF(nv);
    else if (memcmp(&x0, &x, sizeof(double)) != 0 || x0 != x) {
        if ((nv = PyFloat_FromDouble(x)) == NULL)
            return -1;
    }
    if (nv != NULL) {
        slot_set(v, v_value, nv);
        Py_DECREF(nv);
    }
    if (x != x0 && PyList_Append(changed, v) < 0)
        return -1;
    return 1;
}

static int
solve_seeds(PyObject *modified, PyObject *mark, long long markval, PyObject *changed)
{
    Py_ssize_t n = PyList_GET_SIZE(modified), k;
    if (GROW(seeds, cap_seeds, n) < 0)
        return -1;
    for (k = 0; k < n; k++) { /* for c in modified: c._queued = False */
        PyObject *c = PyList_GET_ITEM(modified, k), *id;
        if (check_type(c, CnstType) < 0 || (id = slot(c, c_id, s_id)) == NULL)
            return -1;
        seeds[k].id = PyLong_AsLongLong(id);
        if (seeds[k].id == -1 && PyErr_Occurred())
            return -1;
        seeds[k].c = c;
        slot_set(c, c_queued, Py_False);
    }
    if (n > 1)
        sort_seeds(seeds, n);
    for (k = 0; k < n; k++) {
        PyObject *seed = seeds[k].c;
        if (marked(seed, c_mark, mark, markval))
            continue;
        PyObject *vars = slot(seed, c_vars, s_vars);
        if (vars == NULL)
            return -1;
        if (PyDict_Check(vars) && PyDict_GET_SIZE(vars) == 0) {
            slot_set(seed, c_mark, mark);
            continue;
        }
        int lone = solve_lone(vars, mark, changed);
        if (lone != 0) {
            if (lone < 0)
                return -1;
            continue;
        }
        if (component(seed, mark) < 0 || fill() < 0 || store(changed) < 0)
            return -1;
    }
    return 0;
}

/* The list of modified constraints a solve has read, emptied with its room kept, becomes the next
 * solve's fresh ``self._modified = []`` when nothing else holds it (an empty list either way:
 * only its id tells; no growth by reallocation as the next flow's constraints are appended). */
static PyObject *spare_list;

/* drops the caller's reference to the solve's old list of modified constraints */
static void
recycle(PyObject *modified)
{
    if (Py_REFCNT(modified) != 1 || !PyList_CheckExact(modified) || spare_list != NULL) {
        Py_DECREF(modified);
        return;
    }
    Py_ssize_t n = PyList_GET_SIZE(modified);
    PyObject **items = ((PyListObject *)modified)->ob_item;
    Py_SET_SIZE(modified, 0);
    spare_list = modified;
    for (Py_ssize_t i = 0; i < n; i++) /* constraints: their release runs no Python code */
        Py_DECREF(items[i]);
}

static PyObject *
system_solve(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *changed = PyList_New(0);
    if (changed == NULL)
        return NULL;
    if (solve_lonely(self, changed) < 0)
        goto fail;
    PyObject *modified = slot(self, sy_modified, s_modified);
    if (modified == NULL)
        goto fail;
    if (!PyList_CheckExact(modified)) {
        PyErr_Format(PyExc_TypeError, "max-min solver: System._modified must be a list, got %R", modified);
        goto fail;
    }
    if (PyList_GET_SIZE(modified) == 0)
        return changed;
    Py_INCREF(modified);
    PyObject *solves = increment(self, sy_solves, s_solves);
    Py_XDECREF(solves);
    PyObject *mark = solves == NULL ? NULL : increment(self, sy_mark, s_mark);
    PyObject *fresh = NULL; /* self._modified = [] */
    if (mark != NULL && (fresh = spare_list) != NULL)
        spare_list = NULL;
    else if (mark != NULL)
        fresh = PyList_New(0);
    int rc = fresh == NULL ? -1 : 0;
    if (fresh != NULL)
        slot_set(self, sy_modified, fresh);
    Py_XDECREF(fresh);
    long long markval = 0;
    if (rc == 0) {
        int overflow = 0;
        markval = PyLong_Check(mark) ? PyLong_AsLongLongAndOverflow(mark, &overflow) : 0;
        if (overflow || (markval == -1 && PyErr_Occurred()))
            PyErr_Clear();
        rc = solve_seeds(modified, mark, markval, changed);
    }
    Py_XDECREF(mark);
    recycle(modified);
    if (rc < 0)
        goto fail;
    return changed;
fail:
    Py_DECREF(changed);
    return NULL;
}

/* -- System.variable and System.remove ----------------------------------------------------- */
/* ``a != b`` as Python computes it (no identity shortcut: NaN != NaN) */
static inline int
not_equal(PyObject *a, PyObject *b)
{
    if (PyFloat_CheckExact(a) && PyFloat_CheckExact(b))
        return PyFloat_AS_DOUBLE(a) != PyFloat_AS_DOUBLE(b);
    PyObject *r = PyObject_RichCompare(a, b, Py_NE);
    if (r == NULL)
        return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* ``d[key] = d.get(key, 0) + delta`` (delta 1), or ``n = d[key] - 1; d[key] = n if n else del``
 * (delta -1) */
static int
count(PyObject *d, PyObject *key, int delta)
{
    PyObject *n = PyDict_GetItemWithError(d, key);
    if (n == NULL) {
        if (PyErr_Occurred())
            return -1;
        if (delta < 0) {
            PyErr_SetObject(PyExc_KeyError, key);
            return -1;
        }
        n = i_zero;
    }
    PyObject *m = delta > 0 ? PyNumber_Add(n, i_one) : PyNumber_Subtract(n, i_one);
    if (m == NULL)
        return -1;
    int t = delta > 0 ? 1 : PyObject_IsTrue(m);
    int rc = t < 0 ? -1 : t ? PyDict_SetItem(d, key, m) : PyDict_DelItem(d, key);
    Py_DECREF(m);
    return rc;
}

/* _queue(modified, c): if not c._queued: c._queued = True; modified.append(c) */
static int
queue(PyObject *modified, PyObject *c)
{
    PyObject *q = slot(c, c_queued, s_queued);
    if (q == NULL)
        return -1;
    int t = q == Py_False ? 0 : q == Py_True ? 1 : PyObject_IsTrue(q);
    if (t != 0)
        return t < 0 ? -1 : 0;
    if (!PyList_CheckExact(modified)) {
        PyErr_Format(PyExc_TypeError, "max-min solver: System._modified must be a list, got %R", modified);
        return -1;
    }
    slot_set(c, c_queued, Py_True);
    return PyList_Append(modified, c);
}

/* a Variable as Variable.__init__ makes it, without running Python code */
static PyObject *
new_variable(PyObject *vid, PyObject *penalty, PyObject *bound, PyObject *data)
{
    PyObject *v = VarType->tp_alloc(VarType, 0);
    if (v == NULL)
        return NULL;
    slot_set(v, v_id, vid);
    slot_set(v, v_penalty, penalty);
    slot_set(v, v_bound, bound);
    slot_set(v, v_value, f_zero);
    slot_set(v, v_data, data);
    slot_set(v, v_fixed, Py_False);
    slot_set(v, v_mark, i_zero);
    slot_set(v, v_key, Py_None);
    return v;
}

/* the Python method with the same arguments */
static PyObject *
forward(PyObject *fn, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8], **stack = small;
    if (n + 1 > 8 && (stack = PyMem_Malloc((size_t)(n + 1) * sizeof(PyObject *))) == NULL)
        return PyErr_NoMemory();
    stack[0] = self;
    if (n)
        memcpy(stack + 1, args, (size_t)n * sizeof(PyObject *));
    PyObject *r = PyObject_Vectorcall(fn, stack, nargs + 1, kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return r;
}

#ifdef CEXT_DICT_VERSIONS
/* The keys last read from a system's keyring, by the uses tuple, with the keyring dict and its
 * version (PEP 509; see _cext.h): while that dict is unchanged, keyring.get(id(uses)) gives the
 * same key again (the memo holds the key, so its elements, the tuple, stay alive: the address
 * is that tuple's), without making the int and looking it up. */
#define KEY_MEMOS 512
typedef struct {
    PyObject *ring; /* compared only */
    uint64_t version;
    PyObject *uses; /* compared only */
    PyObject *key;  /* held */
} key_memo;
static key_memo key_memos[KEY_MEMOS];
#endif

/* the class key of v (System.variable's lines): the one last made for its elements if it fits,
 * else System._key_of(v); new reference */
static PyObject *
key_for(PyObject *self, PyObject *v, PyObject *uses, PyObject *penalty, PyObject *bound)
{
    PyObject *ring = slot(self, sy_keyring, s_keyring);
    if (ring == NULL)
        return NULL;
    if (!PyDict_CheckExact(ring))
        return call_method1(self, s_key_of, v);
    PyObject *key; /* borrowed: self._keyring.get(id(uses)) */
#ifdef CEXT_DICT_VERSIONS
    key_memo *m = &key_memos[((uintptr_t)uses >> 4) & (KEY_MEMOS - 1)];
    if (m->ring == ring && m->version == DICT_VERSION(ring) && m->uses == uses)
        key = m->key;
    else
#endif
    {
        PyObject *ident = PyLong_FromVoidPtr(uses);
        if (ident == NULL)
            return NULL;
        key = PyDict_GetItemWithError(ring, ident);
        Py_DECREF(ident);
        if (key == NULL && PyErr_Occurred())
            return NULL;
#ifdef CEXT_DICT_VERSIONS
        if (key != NULL) {
            Py_INCREF(key);
            Py_XSETREF(m->key, key); /* a _Key: its release runs no Python code */
            m->ring = ring;
            m->version = DICT_VERSION(ring);
            m->uses = uses;
        }
#endif
    }
    int fits = 0;
    if (key != NULL && key != Py_None && Py_IS_TYPE(key, KeyType) && SLOT(key, k_elements) == uses &&
        SLOT(key, k_penalty) != NULL && SLOT(key, k_bound) != NULL) {
        int ne = not_equal(SLOT(key, k_penalty), penalty);
        if (ne < 0)
            return NULL;
        if (!ne) {
            ne = not_equal(SLOT(key, k_bound), bound);
            if (ne < 0)
                return NULL;
            fits = !ne;
        }
    }
    if (fits)
        return Py_NewRef(key);
    return call_method1(self, s_key_of, v);
}

/* System.variable(penalty, bound, uses, data, unique): the network model's call (five
 * positional arguments, ``unique`` True, ``uses`` a tuple, ``penalty`` a positive float)
 * compiled, the rest by the Python method */
static PyObject *
system_variable(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (kwnames != NULL || nargs != 5 || args[4] != Py_True || !PyTuple_CheckExact(args[2]) ||
        !PyFloat_CheckExact(args[0]) || !(PyFloat_AS_DOUBLE(args[0]) > 0.0))
        return forward(py_variable, self, args, nargs, kwnames);
    PyObject *penalty = args[0], *bound = args[1], *uses = args[2], *data = args[3];
    double pen = PyFloat_AS_DOUBLE(penalty);
    PyObject *v = NULL, *key = NULL, *result = NULL;
    /* self._next_id += 1 */
    PyObject *nid = increment(self, sy_next_id, s_next_id);
    if (nid == NULL)
        goto out;
    v = new_variable(nid, penalty, bound, data);
    Py_DECREF(nid);
    if (v == NULL)
        goto out;
    PyObject *modified = slot(self, sy_modified, s_modified);
    if (modified == NULL || !PyList_CheckExact(modified)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "System._modified must be a list");
        goto out;
    }
    Py_INCREF(modified);
    slot_set(v, v_elements, uses);
    key = key_for(self, v, uses, penalty, bound);
    if (key == NULL) {
        Py_DECREF(modified);
        goto out;
    }
    slot_set(v, v_key, key);
    Py_ssize_t n = PyTuple_GET_SIZE(uses);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(uses, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError, "System.variable: a use must be (constraint, coefficient), got %R", pair);
            break;
        }
        PyObject *c = PyTuple_GET_ITEM(pair, 0), *coeff = PyTuple_GET_ITEM(pair, 1);
        if (check_type(c, CnstType) < 0)
            break;
        PyObject *vars = slot(c, c_vars, s_vars);
        if (vars == NULL ||
            (PyDict_CheckExact(vars) ? PyDict_SetItem(vars, v, coeff) : PyObject_SetItem(vars, v, coeff)) < 0 ||
            queue(modified, c) < 0)
            break;
        PyObject *keys = slot(c, c_keys, s_keys);
        if (keys == NULL)
            break;
        if (keys != Py_None) {
            if (!PyDict_Check(keys)) {
                PyErr_SetString(PyExc_TypeError, "Constraint._keys must be a dict or None");
                break;
            }
            if (count(keys, key, 1) < 0)
                break;
            PyObject *total = slot(c, c_sum, s_sum);
            if (total == NULL)
                break;
            if (total != Py_None) { /* c._sum = total + coeff / penalty */
                double t, a;
                if (as_double(total, &t) < 0 || as_double(coeff, &a) < 0)
                    break;
                PyObject *sum = PyFloat_FromDouble(t + a / pen);
                if (sum == NULL)
                    break;
                slot_set(c, c_sum, sum);
                Py_DECREF(sum);
            }
        }
    }
    Py_DECREF(modified);
    if (PyErr_Occurred())
        goto out;
    if (n == 0) { /* no constraint: self._lonely.append(v) */
        PyObject *lonely = slot(self, sy_lonely, s_lonely);
        if (lonely == NULL)
            goto out;
        PyObject *r = PyObject_CallMethod(lonely, "append", "O", v);
        if (r == NULL)
            goto out;
        Py_DECREF(r);
    }
    result = Py_NewRef(v);
out:
    Py_XDECREF(key);
    Py_XDECREF(v);
    return result;
}

/* System.remove(v) */
static PyObject *
system_remove(PyObject *self, PyObject *v)
{
    if (!PyObject_TypeCheck(v, VarType))
        return PyObject_CallFunctionObjArgs(py_remove, self, v, NULL);
    PyObject *elements = slot(v, v_elements, s_elements), *key = slot(v, v_key, s_key);
    if (elements == NULL || key == NULL)
        return NULL;
    if (!PyTuple_Check(elements) && !PyList_Check(elements))
        return PyObject_CallFunctionObjArgs(py_remove, self, v, NULL);
    Py_INCREF(elements);
    Py_INCREF(key);
    PyObject *result = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(elements);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(elements, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError, "System.remove: an element must be (constraint, coefficient), got %R", pair);
            goto out;
        }
        PyObject *c = PyTuple_GET_ITEM(pair, 0);
        if (check_type(c, CnstType) < 0)
            goto out;
        PyObject *vars = slot(c, c_vars, s_vars);
        if (vars == NULL)
            goto out;
        int nonempty;
        if (PyDict_CheckExact(vars)) {
            if (PyDict_DelItem(vars, v) < 0)
                goto out;
            nonempty = PyDict_GET_SIZE(vars) != 0;
        }
        else if (PyObject_DelItem(vars, v) < 0)
            goto out;
        else
            nonempty = PyObject_IsTrue(vars);
        if (nonempty < 0)
            goto out;
        if (nonempty) { /* _queue(self._modified, c), and the class count */
            PyObject *modified = slot(self, sy_modified, s_modified);
            if (modified == NULL || queue(modified, c) < 0)
                goto out;
            PyObject *keys = slot(c, c_keys, s_keys);
            if (keys == NULL)
                goto out;
            if (keys != Py_None) {
                if (!PyDict_Check(keys)) {
                    PyErr_SetString(PyExc_TypeError, "Constraint._keys must be a dict or None");
                    goto out;
                }
                if (count(keys, key, -1) < 0)
                    goto out;
            }
        }
        else
            slot_set(c, c_keys, Py_None);
        slot_set(c, c_sum, Py_None);
    }
    PyObject *empty = PyList_New(0);
    if (empty == NULL)
        goto out;
    slot_set(v, v_elements, empty);
    Py_DECREF(empty);
    slot_set(v, v_key, Py_None);
    slot_set(v, v_value, f_zero);
    /* bool(self._modified or self._lonely) */
    PyObject *modified = slot(self, sy_modified, s_modified);
    if (modified == NULL)
        goto out;
    int t = PyObject_IsTrue(modified);
    if (t == 0) {
        PyObject *lonely = slot(self, sy_lonely, s_lonely);
        if (lonely == NULL)
            goto out;
        t = PyObject_IsTrue(lonely);
    }
    if (t >= 0)
        result = Py_NewRef(t ? Py_True : Py_False);
out:
    Py_DECREF(elements);
    Py_DECREF(key);
    return result;
}
/* -- setup -------------------------------------------------------------------------------- */
static PyMethodDef solve_def = {"solve", (PyCFunction)system_solve, METH_NOARGS,
                                "System.solve, compiled (smpy.lmm._lmmaccel)"};
static PyMethodDef variable_def = {"variable", (PyCFunction)(void (*)(void))system_variable,
                                   METH_FASTCALL | METH_KEYWORDS, "System.variable, compiled (smpy.lmm._lmmaccel)"};
static PyMethodDef remove_def = {"remove", (PyCFunction)system_remove, METH_O,
                                 "System.remove, compiled (smpy.lmm._lmmaccel)"};

static PyObject *
setup(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *system, *cnst, *var, *key, *pyvar, *pyrem;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO", &PyType_Type, &system, &PyType_Type, &cnst, &PyType_Type, &var,
                          &PyType_Type, &key, &pyvar, &pyrem))
        return NULL;
    Py_XSETREF(CnstType, (PyTypeObject *)Py_NewRef(cnst));
    Py_XSETREF(VarType, (PyTypeObject *)Py_NewRef(var));
    Py_XSETREF(KeyType, (PyTypeObject *)Py_NewRef(key));
    Py_XSETREF(py_variable, Py_NewRef(pyvar));
    Py_XSETREF(py_remove, Py_NewRef(pyrem));
#define OFF(v, cls, name) if ((v = slot_offset(cls, name)) < 0) return NULL
    OFF(c_id, CnstType, "id");
    OFF(c_capacity, CnstType, "capacity");
    OFF(c_vars, CnstType, "vars");
    OFF(c_mark, CnstType, "_mark");
    OFF(c_keys, CnstType, "_keys");
    OFF(c_sum, CnstType, "_sum");
    OFF(c_queued, CnstType, "_queued");
    OFF(v_id, VarType, "id");
    OFF(v_penalty, VarType, "penalty");
    OFF(v_bound, VarType, "bound");
    OFF(v_elements, VarType, "elements");
    OFF(v_value, VarType, "value");
    OFF(v_mark, VarType, "_mark");
    OFF(v_data, VarType, "data");
    OFF(v_fixed, VarType, "_fixed");
    OFF(v_key, VarType, "_key");
    OFF(k_elements, KeyType, "elements");
    OFF(k_penalty, KeyType, "penalty");
    OFF(k_bound, KeyType, "bound");
    PyTypeObject *st = (PyTypeObject *)system;
    OFF(sy_solves, st, "solves");
    OFF(sy_mark, st, "_mark");
    OFF(sy_next_id, st, "_next_id");
    OFF(sy_modified, st, "_modified");
    OFF(sy_lonely, st, "_lonely");
    OFF(sy_keyring, st, "_keyring");
#undef OFF
    return Py_BuildValue("{sNsNsN}", "solve", PyDescr_NewMethod(st, &solve_def),
                         "variable", PyDescr_NewMethod(st, &variable_def), "remove", PyDescr_NewMethod(st, &remove_def));
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(System, Constraint, Variable, _Key, System.variable, System.remove) "
     "-> the compiled methods by name"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_lmmaccel", .m_doc = "smpy's compiled max-min solver", .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__lmmaccel(void)
{
    INTERN(s_lonely, "_lonely"); INTERN(s_modified, "_modified"); INTERN(s_mark, "_mark");
    INTERN(s_solves, "solves"); INTERN(s_id, "id"); INTERN(s_capacity, "capacity"); INTERN(s_vars, "vars");
    INTERN(s_penalty, "penalty"); INTERN(s_bound, "bound"); INTERN(s_elements, "elements");
    INTERN(s_value, "value"); INTERN(s_next_id, "_next_id"); INTERN(s_keyring, "_keyring");
    INTERN(s_key_of, "_key_of"); INTERN(s_keys, "_keys"); INTERN(s_sum, "_sum"); INTERN(s_key, "_key"); INTERN(s_queued, "_queued");
    if ((f_zero = PyFloat_FromDouble(0.0)) == NULL || (i_one = PyLong_FromLong(1)) == NULL ||
        (i_zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    return PyModule_Create(&moddef);
}
