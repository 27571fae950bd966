/* Per-rank heaps for numpy arrays under smpyrun (see rankheap.py for the model and why).
 *
 * A numpy memory handler (numpy >= 1.22, PyDataMem_Handler, version 1). Blocks below
 * RH_LARGE bytes go to malloc. Larger ones are mapped with mmap and, when freed, kept in
 * the free list of the rank that freed them (its "heap"), to be reused by that rank only:
 * a rank finds warm pages where its own real process would, and fresh (zero, not yet
 * faulted) pages where its real process would have had to grow its heap, however much
 * memory other ranks freed before. Blocks over RH_MAX_CACHED are always unmapped (glibc
 * never keeps chunks over its largest dynamic mmap threshold), a rank keeps at most
 * rh_owner_cap bytes (glibc trims its heap top beyond twice that threshold) and all ranks
 * together at most rh_global_cap bytes. Beyond that, freed blocks go to one shared list
 * (itself capped at rh_owner_cap), from which any rank takes a block when its own list has
 * none: at scale the model degrades to a shared allocator's warm reuse, not to fresh pages
 * for everyone, and the emulator's memory stays bounded at any number of ranks.
 *
 * No Python headers: the struct layout is numpy's, the capsule is made with ctypes.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} rh_allocator;

typedef struct {
    char name[127];
    uint8_t version;
    rh_allocator allocator;
} rh_handler;

#define RH_LARGE ((size_t)128 << 10)        /* glibc's initial mmap threshold */
#define RH_MAX_CACHED ((size_t)32 << 20)    /* glibc's largest dynamic mmap threshold */
#define RH_HDR 64                           /* header of a large block: 64-byte alignment */
#define RH_SHDR 16                          /* header of a small block: malloc's alignment */
#define TAG_SMALL 0x534d414c4c534d59ULL
#define TAG_LARGE 0x4c41524745534d59ULL
#define HUGE_ADVICE ((size_t)4 << 20)       /* numpy's madvise(MADV_HUGEPAGE) size */

typedef struct block {
    size_t cap;          /* mapped bytes, header included */
    struct block *next;  /* in a free list */
    uint64_t pad[5];
    uint64_t tag;        /* last word before the user's bytes */
} block;

typedef struct {
    block *head;
    size_t bytes;
} rh_list;

/* set from Python */
int rh_owner = 0;                /* 0: no rank runs (smpy itself); rank r: r + 1 */
size_t rh_owner_cap = (size_t)64 << 20;
size_t rh_global_cap = (size_t)1 << 30;
int rh_hugepage = 0;
/* statistics, read from Python */
uint64_t rh_fresh = 0, rh_reused = 0, rh_unmapped = 0;
size_t rh_cached = 0;

static rh_list *lists = NULL;
static size_t nlists = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page = 4096;

static size_t round_cap(size_t size) {
    size_t n = size + RH_HDR;
    return (n + page - 1) / page * page;
}

static rh_list *list_of(int owner) {  /* lock held */
    if (owner < 0)
        owner = 0;
    if ((size_t)owner >= nlists) {
        size_t n = nlists ? nlists : 16;
        while (n <= (size_t)owner)
            n *= 2;
        rh_list *grown = realloc(lists, n * sizeof(rh_list));
        if (grown == NULL)
            return NULL;
        memset(grown + nlists, 0, (n - nlists) * sizeof(rh_list));
        lists = grown;
        nlists = n;
    }
    return &lists[owner];
}

/* best fit in list l among the blocks that waste at most half of themselves (lock held) */
static block **best_fit(rh_list *l, size_t cap) {
    block **best = NULL;
    if (l == NULL)
        return NULL;
    for (block **p = &l->head; *p != NULL; p = &(*p)->next) {
        size_t c = (*p)->cap;
        if (c >= cap && c <= 2 * cap && (best == NULL || c < (*best)->cap))
            best = p;
    }
    return best;
}

static void *large_alloc(size_t size, int *fresh) {
    size_t cap = round_cap(size);
    if (cap <= RH_MAX_CACHED) {
        pthread_mutex_lock(&lock);
        rh_list *l = list_of(rh_owner);
        block **best = best_fit(l, cap);
        if (best == NULL && rh_owner != 0) {  /* the shared list (overflow, smpy's own) */
            l = list_of(0);
            best = best_fit(l, cap);
        }
        if (best != NULL) {
            block *b = *best;
            *best = b->next;
            l->bytes -= b->cap;
            rh_cached -= b->cap;
            rh_reused++;
            pthread_mutex_unlock(&lock);
            *fresh = 0;
            return (char *)b + RH_HDR;
        }
        pthread_mutex_unlock(&lock);
    }
    void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (rh_hugepage && size >= HUGE_ADVICE)
        madvise(m, cap, MADV_HUGEPAGE);
#endif
    block *b = m;
    b->cap = cap;
    b->next = NULL;
    b->tag = TAG_LARGE;
    __atomic_add_fetch(&rh_fresh, 1, __ATOMIC_RELAXED);
    *fresh = 1;
    return (char *)b + RH_HDR;
}

static void large_free(block *b) {
    size_t cap = b->cap;
    if (cap <= RH_MAX_CACHED) {
        pthread_mutex_lock(&lock);
        rh_list *l = list_of(rh_cached + cap <= rh_global_cap ? rh_owner : 0);
        if (l != NULL) {
            b->next = l->head;
            l->head = b;
            l->bytes += cap;
            rh_cached += cap;
            /* over the rank's cap: unmap its oldest blocks (the end of its list) */
            while (l->bytes > rh_owner_cap && l->head != NULL) {
                block **p = &l->head;
                while ((*p)->next != NULL)
                    p = &(*p)->next;
                block *old = *p;
                *p = NULL;
                l->bytes -= old->cap;
                rh_cached -= old->cap;
                rh_unmapped++;
                munmap(old, old->cap);
            }
            pthread_mutex_unlock(&lock);
            return;
        }
        pthread_mutex_unlock(&lock);
    }
    __atomic_add_fetch(&rh_unmapped, 1, __ATOMIC_RELAXED);
    munmap(b, cap);
}

static void *small_alloc(size_t size, int zero) {
    char *p = zero ? calloc(1, size + RH_SHDR) : malloc(size + RH_SHDR);
    if (p == NULL)
        return NULL;
    ((uint64_t *)(p + RH_SHDR))[-1] = TAG_SMALL;
    return p + RH_SHDR;
}

static void *rh_malloc(void *ctx, size_t size) {
    (void)ctx;
    if (size < RH_LARGE)
        return small_alloc(size, 0);
    int fresh;
    return large_alloc(size, &fresh);
}

static void *rh_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize != 0 && nelem > SIZE_MAX / elsize)
        return NULL;
    size_t size = nelem * elsize;
    if (size < RH_LARGE)
        return small_alloc(size, 1);
    int fresh;
    void *p = large_alloc(size, &fresh);
    if (p != NULL && !fresh)
        memset(p, 0, size);
    return p;
}

static void rh_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    (void)size;
    if (ptr == NULL)
        return;
    uint64_t tag = ((uint64_t *)ptr)[-1];
    if (tag == TAG_LARGE)
        large_free((block *)((char *)ptr - RH_HDR));
    else
        free((char *)ptr - RH_SHDR);
}

static void *rh_realloc(void *ctx, void *ptr, size_t new_size) {
    if (ptr == NULL)
        return rh_malloc(ctx, new_size);
    uint64_t tag = ((uint64_t *)ptr)[-1];
    size_t old;
    if (tag == TAG_LARGE) {
        block *b = (block *)((char *)ptr - RH_HDR);
        old = b->cap - RH_HDR;
        if (new_size <= old && new_size >= RH_LARGE)
            return ptr;
    } else {
        old = malloc_usable_size((char *)ptr - RH_SHDR) - RH_SHDR;
        if (new_size < RH_LARGE) {
            char *p = realloc((char *)ptr - RH_SHDR, new_size + RH_SHDR);
            return p == NULL ? NULL : p + RH_SHDR;
        }
    }
    void *q = rh_malloc(ctx, new_size);
    if (q == NULL)
        return NULL;
    memcpy(q, ptr, old < new_size ? old : new_size);
    rh_free(ctx, ptr, old);
    return q;
}

rh_handler rh_numpy_handler = {
    "smpy_rank_heaps",
    1,
    {NULL, rh_malloc, rh_calloc, rh_realloc, rh_free},
};

/* unmap every cached block (end of a run) */
void rh_release(void) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nlists; i++) {
        block *b = lists[i].head;
        while (b != NULL) {
            block *next = b->next;
            munmap(b, b->cap);
            b = next;
        }
        lists[i].head = NULL;
        lists[i].bytes = 0;
    }
    rh_cached = 0;
    pthread_mutex_unlock(&lock);
}

void rh_init(size_t pagesize) { page = pagesize; }
