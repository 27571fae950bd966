/* The optional compiled twin of the max-min solver (smpy/lmm/maxmin.py; issues 23 and 24).
 *
 *   system_solve   smpy.lmm.maxmin.System.solve, with the general progressive filling of
 *                  System._component and System._solve_component (_start_filling,
 *                  _bounded_level, _saturated_level, _fix)
 *
 * The Python solver stays the reference (the pure path, used whenever this file cannot be
 * compiled, and with smpy/accel:off). This twin gives its results bit for bit: the same
 * components, seeds in the same order, the same rounds, the same IEEE double operations in the
 * same order (built with -ffp-contract=off), the same values stored in each variable's
 * ``value`` and the same list of changed variables in the same order
 * (tests/lmm/test_lmm_accel.py replays seeded random systems both ways, and whole runs).
 *
 * The Python solver's shortcuts (the lone-variable cache, the class path of components made of
 * few classes of identical flows) are, by their own tests, the general filling bit for bit:
 * this twin always runs the general filling, which in C is cheaper than either shortcut in
 * Python. It reads the Python objects' slots at their offsets (Constraint and Variable use
 * __slots__), copies one component at a time into C arrays (an adjacency list per constraint
 * in the order of its ``vars`` dict, one per variable in the order of its ``elements``), runs
 * the filling on doubles, and writes back the values (and the ``_mark`` slots the Python
 * component search sets, so the two paths can alternate on one system). It does not maintain
 * the class path's bookkeeping of a filling (``_rem``, ``_use``, ``_nfree``, ``_fixed``): the
 * Python solver sets those afresh before reading them.
 *
 * Numbers are read as C doubles (the Python ints a caller might pass as a bound or a
 * coefficient convert exactly below 2**53). NaN capacities, penalties or bounds are not
 * supported by either path.
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 + maxmin._EPS, as Python computes it (a double sum of two constants) */
static const double EPS1 = 1.0 + 1e-12;

static PyTypeObject *CnstType, *VarType;
static Py_ssize_t c_id, c_capacity, c_vars, c_mark;
static Py_ssize_t v_id, v_penalty, v_bound, v_elements, v_value, v_mark;
static PyObject *s_lonely, *s_modified, *s_mark, *s_solves, *s_id, *s_capacity, *s_vars, *s_penalty, *s_bound,
    *s_elements, *s_value;
static PyObject *f_zero, *i_one;

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
    long long id; /* read for the bounded variables only (their sort's second key) */
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

/* -- object -> index of the current component (open addressing, generation-stamped) ------ */
typedef struct {
    PyObject *key;
    Py_ssize_t val;
    unsigned gen;
} Slot;

static Slot *tab;
static size_t tabsize, tabfill;
static unsigned gen;

static inline size_t
hash_ptr(PyObject *p)
{
    return (size_t)((((uintptr_t)p) >> 4) * (uintptr_t)0x9E3779B97F4A7C15ULL);
}

static int
map_reset(void)
{
    if (tab == NULL) {
        tabsize = 1024;
        tab = PyMem_Calloc(tabsize, sizeof(Slot));
        if (tab == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (++gen == 0) { /* wrapped: clear the stamps */
        memset(tab, 0, tabsize * sizeof(Slot));
        gen = 1;
    }
    tabfill = 0;
    return 0;
}

static int map_put(PyObject *key, Py_ssize_t val);

static int
map_grow(void)
{
    Slot *old = tab;
    size_t oldsize = tabsize;
    unsigned g = gen;
    Slot *t = PyMem_Calloc(oldsize * 2, sizeof(Slot));
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    tab = t;
    tabsize = oldsize * 2;
    gen = 1;
    tabfill = 0;
    for (size_t i = 0; i < oldsize; i++)
        if (old[i].gen == g && old[i].key != NULL)
            map_put(old[i].key, old[i].val);
    PyMem_Free(old);
    return 0;
}

static int
map_put(PyObject *key, Py_ssize_t val)
{
    if (2 * (tabfill + 1) > tabsize && map_grow() < 0)
        return -1;
    size_t mask = tabsize - 1;
    size_t i = hash_ptr(key) & mask;
    while (tab[i].gen == gen) {
        if (tab[i].key == key) {
            tab[i].val = val;
            return 0;
        }
        i = (i + 1) & mask;
    }
    tab[i].key = key;
    tab[i].val = val;
    tab[i].gen = gen;
    tabfill++;
    return 0;
}

static inline Py_ssize_t
map_get(PyObject *key)
{
    size_t mask = tabsize - 1;
    size_t i = hash_ptr(key) & mask;
    while (tab[i].gen == gen) {
        if (tab[i].key == key)
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
    if (map_put(c, ncn) < 0)
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
    if (map_put(v, j) < 0)
        return -1;
    nvr++;
    PyObject **items;
    Py_ssize_t n;
    if (PyTuple_Check(elements)) {
        items = &PyTuple_GET_ITEM(elements, 0);
        n = PyTuple_GET_SIZE(elements);
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
        if (check_type(c2, CnstType) < 0)
            return -1;
        double coeff;
        if (as_double(PyTuple_GET_ITEM(pair, 1), &coeff) < 0)
            return -1;
        Py_ssize_t ci;
        if (SLOT(c2, c_mark) == mark) {
            ci = map_get(c2);
            if (ci < 0) {
                PyErr_SetString(PyExc_RuntimeError, "max-min solver: a marked constraint outside the component");
                return -1;
            }
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
        Py_ssize_t pos = 0;
        PyObject *v, *coeff;
        while (PyDict_Next(vars, &pos, &v, &coeff)) {
            Py_ssize_t j;
            if (check_type(v, VarType) < 0)
                return -1;
            if (SLOT(v, v_mark) == mark) {
                j = map_get(v);
                if (j < 0) {
                    PyErr_SetString(PyExc_RuntimeError, "max-min solver: a marked variable outside the component");
                    return -1;
                }
            }
            else if ((j = add_vr(v, mark)) < 0)
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
static int
cmp_bounded(const void *a, const void *b)
{
    const Vr *x = &vr[*(const Py_ssize_t *)a], *y = &vr[*(const Py_ssize_t *)b];
    if (x->blevel < y->blevel)
        return -1;
    if (y->blevel < x->blevel)
        return 1;
    return x->id < y->id ? -1 : x->id > y->id;
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
    for (Py_ssize_t f = 0; f < nfree; f++) {
        Vr *v = &vr[freev[f]];
        if (v->bound != Py_HUGE_VAL) {
            PyObject *id = slot(v->obj, v_id, s_id);
            if (id == NULL)
                return -1;
            v->id = PyLong_AsLongLong(id);
            if (v->id == -1 && PyErr_Occurred())
                return -1;
            v->blevel = v->bound * v->pen;
            bounded[nb++] = freev[f];
        }
    }
    if (nb > 1)
        qsort(bounded, (size_t)nb, sizeof(Py_ssize_t), cmp_bounded);
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
    PyObject *lonely = PyObject_GetAttr(self, s_lonely);
    if (lonely == NULL)
        return -1;
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
        PyObject *elements = PyObject_GetAttr(v, s_elements);
        int has = elements == NULL ? -1 : PyObject_IsTrue(elements);
        Py_XDECREF(elements);
        if (has < 0)
            rc = -1;
        else if (!has) {
            PyObject *pen = PyObject_GetAttr(v, s_penalty);
            int pos = pen == NULL ? -1 : PyObject_RichCompareBool(pen, f_zero, Py_GT);
            Py_XDECREF(pen);
            PyObject *nv = pos < 0 ? NULL : pos ? PyObject_GetAttr(v, s_bound) : Py_NewRef(f_zero);
            PyObject *old = nv == NULL ? NULL : PyObject_GetAttr(v, s_value);
            int ne = old == NULL ? -1 : PyObject_RichCompareBool(nv, old, Py_NE);
            if (ne < 0 || (ne && (PyObject_SetAttr(v, s_value, nv) < 0 || PyList_Append(changed, v) < 0)))
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
    rc = PyObject_SetAttr(self, s_lonely, fresh);
    Py_DECREF(fresh);
    return rc;
}

/* ``self.name += 1``; returns the new value (new reference) */
static PyObject *
increment(PyObject *self, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(self, name);
    if (v == NULL)
        return NULL;
    PyObject *w = PyNumber_InPlaceAdd(v, i_one);
    Py_DECREF(v);
    if (w == NULL || PyObject_SetAttr(self, name, w) < 0) {
        Py_XDECREF(w);
        return NULL;
    }
    return w;
}

static int
solve_seeds(PyObject *modified, PyObject *mark, long long markval, PyObject *changed)
{
    Py_ssize_t n = PyDict_GET_SIZE(modified);
    if (GROW(seeds, cap_seeds, n) < 0)
        return -1;
    Py_ssize_t pos = 0, k = 0;
    PyObject *key, *c;
    while (PyDict_Next(modified, &pos, &key, &c)) {
        seeds[k].id = PyLong_AsLongLong(key);
        if (seeds[k].id == -1 && PyErr_Occurred())
            return -1;
        seeds[k].c = c;
        k++;
    }
    if (n > 1)
        qsort(seeds, (size_t)n, sizeof(Seed), cmp_seed);
    for (k = 0; k < n; k++) {
        PyObject *seed = seeds[k].c;
        if (check_type(seed, CnstType) < 0)
            return -1;
        if (marked(seed, c_mark, mark, markval))
            continue;
        PyObject *vars = slot(seed, c_vars, s_vars);
        if (vars == NULL)
            return -1;
        if (PyDict_Check(vars) && PyDict_GET_SIZE(vars) == 0) {
            slot_set(seed, c_mark, mark);
            continue;
        }
        if (component(seed, mark) < 0 || fill() < 0 || store(changed) < 0)
            return -1;
    }
    return 0;
}

static PyObject *
system_solve(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *changed = PyList_New(0);
    if (changed == NULL)
        return NULL;
    if (solve_lonely(self, changed) < 0)
        goto fail;
    PyObject *modified = PyObject_GetAttr(self, s_modified);
    if (modified == NULL)
        goto fail;
    if (!PyDict_Check(modified)) {
        PyErr_Format(PyExc_TypeError, "max-min solver: System._modified must be a dict, got %R", modified);
        Py_DECREF(modified);
        goto fail;
    }
    if (PyDict_GET_SIZE(modified) == 0) {
        Py_DECREF(modified);
        return changed;
    }
    PyObject *solves = increment(self, s_solves);
    Py_XDECREF(solves);
    PyObject *mark = solves == NULL ? NULL : increment(self, s_mark);
    PyObject *fresh = mark == NULL ? NULL : PyDict_New();
    int rc = fresh == NULL ? -1 : PyObject_SetAttr(self, s_modified, fresh);
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
    Py_DECREF(modified);
    if (rc < 0)
        goto fail;
    return changed;
fail:
    Py_DECREF(changed);
    return NULL;
}

/* -- setup -------------------------------------------------------------------------------- */
static PyMethodDef solve_def = {"solve", (PyCFunction)system_solve, METH_NOARGS,
                                "System.solve, compiled (smpy.lmm._lmmaccel)"};

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *system, *cnst, *var;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &system, &PyType_Type, &cnst, &PyType_Type, &var))
        return NULL;
    Py_XSETREF(CnstType, (PyTypeObject *)Py_NewRef(cnst));
    Py_XSETREF(VarType, (PyTypeObject *)Py_NewRef(var));
#define OFF(v, cls, name) if ((v = slot_offset(cls, name)) < 0) return NULL
    OFF(c_id, CnstType, "id");
    OFF(c_capacity, CnstType, "capacity");
    OFF(c_vars, CnstType, "vars");
    OFF(c_mark, CnstType, "_mark");
    OFF(v_id, VarType, "id");
    OFF(v_penalty, VarType, "penalty");
    OFF(v_bound, VarType, "bound");
    OFF(v_elements, VarType, "elements");
    OFF(v_value, VarType, "value");
    OFF(v_mark, VarType, "_mark");
#undef OFF
    return PyDescr_NewMethod((PyTypeObject *)system, &solve_def);
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(System, Constraint, Variable) -> the compiled System.solve descriptor"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_lmmaccel", .m_doc = "smpy's compiled max-min solver", .m_size = -1,
    .m_methods = methods,
};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC
PyInit__lmmaccel(void)
{
    INTERN(s_lonely, "_lonely"); INTERN(s_modified, "_modified"); INTERN(s_mark, "_mark");
    INTERN(s_solves, "solves"); INTERN(s_id, "id"); INTERN(s_capacity, "capacity"); INTERN(s_vars, "vars");
    INTERN(s_penalty, "penalty"); INTERN(s_bound, "bound"); INTERN(s_elements, "elements");
    INTERN(s_value, "value");
    if ((f_zero = PyFloat_FromDouble(0.0)) == NULL || (i_one = PyLong_FromLong(1)) == NULL)
        return NULL;
    return PyModule_Create(&moddef);
}
