/* Per-rank heaps for numpy arrays under smpyrun (see rankheap.py for the model and why).
 *
 * A numpy memory handler (numpy >= 1.22, PyDataMem_Handler, version 1). Requests below
 * RH_LARGE bytes go to malloc. Larger ones go to the running rank's *arena*, a model of
 * glibc's main arena in the rank's own process:
 *  - a request of at least the arena's mmap threshold (128 KiB at first) is mapped on its
 *    own, fresh, and unmapped when freed; freeing such a chunk of at most 32 MiB raises the
 *    threshold to its size (glibc's dynamic threshold) and the trim threshold to twice that;
 *  - a smaller request is served from the arena's heap, a contiguous range of address
 *    space: the best-fitting free chunk (split), else the top chunk, which grows by the
 *    missing bytes plus 128 KiB of slack (M_TOP_PAD) into pages never touched (fresh: the
 *    rank pays their faults);
 *  - calloc clears only the bytes of a chunk that may hold old data: a mapped chunk and the
 *    pages the heap grows into read as zero and are left untouched, as glibc's calloc does;
 *  - a freed chunk is coalesced with free neighbours; when the top chunk reaches the trim
 *    threshold, everything above the slack is given back (MADV_DONTNEED) and will fault
 *    in again, as glibc's systrim does.
 * So a rank finds warm pages exactly where its real process's allocator would, and pays for
 * fresh ones where it would have had to, however much memory other ranks freed. A chunk
 * returns to the arena it came from, whoever frees it (as in glibc).
 * While the free memory all arenas hold exceeds rh_global_cap, new requests go to malloc,
 * shared by all ranks (the emulator's memory stays bounded at any number of ranks, and the
 * model degrades to one allocator's warm reuse), and freed chunks give their pages back.
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
#define RH_MAX_THRESH ((size_t)32 << 20)    /* glibc's largest dynamic mmap threshold */
#define RH_TOP_PAD ((size_t)128 << 10)      /* glibc's M_TOP_PAD */
#define RH_RESERVE ((size_t)4 << 30)        /* address space of one arena's heap */
#define RH_HDR 80                           /* chunk header; the user's bytes are 16 bytes past
                                               a 64-byte boundary in a mapped chunk, as glibc's */
#define RH_ALIGN 16                         /* chunk granularity (glibc's MALLOC_ALIGNMENT) */
#define TAG_OF(c) (((uint64_t *)((char *)(c) + RH_HDR))[-1])
#define RH_SHDR 16                          /* header of a malloc'ed block */
#define TAG_SMALL 0x534d414c4c534d59ULL
#define TAG_CHUNK 0x4348554e4b534d59ULL
#define TAG_MAPPED 0x4d41505045534d59ULL
#define HUGE_ADVICE ((size_t)4 << 20)       /* numpy's madvise(MADV_HUGEPAGE) size */

typedef struct chunk {
    size_t size;          /* bytes, header included (multiple of RH_ALIGN) */
    size_t prev_size;     /* size of the chunk before (0: first chunk) */
    int32_t owner;        /* arena */
    int32_t free;
    struct chunk *next;   /* free list, when free */
    struct chunk *prev;
    uint64_t pad[3];      /* then, as the last word before the user's bytes, its tag */
} chunk;

typedef struct {
    char *base;           /* heap: [base, top) chunks, [top, brk) the top chunk's touched part */
    char *top;
    char *brk;
    chunk *free_list;
    size_t free_bytes;    /* in free chunks (not the top) */
    size_t last;          /* size of the chunk just below the top (0: none) */
    size_t thresh;        /* dynamic mmap threshold */
} arena;

/* set from Python */
int rh_owner = 0;                /* 0: no rank runs (smpy itself); rank r: r + 1 */
size_t rh_global_cap = (size_t)1 << 30;
int rh_hugepage = 0;             /* advise huge pages as numpy's default handler does */
int rh_prefault = 0;             /* fault in a freshly mapped malloc'ed chunk in one call */
/* statistics, read from Python */
uint64_t rh_fresh = 0, rh_reused = 0, rh_unmapped = 0, rh_advised = 0, rh_prefaulted = 0;
size_t rh_cached = 0;            /* free bytes held by all arenas (free chunks + top) */
int rh_track = 0;                /* count the bytes each owner holds (rh_used) */

/* bytes of numpy data each owner holds (its blocks' sizes, headers included), counted while
 * rh_track is set; blocks allocated before may be freed after: counts are clamped at 0 when read */
static int64_t *used_by = NULL;
static size_t nused = 0;

static arena *arenas = NULL;
static size_t narenas = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page = 4096;

static size_t up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static void account_locked(int owner, int64_t delta) {  /* lock held */
    if (owner < 0)
        owner = 0;
    if ((size_t)owner >= nused) {
        size_t n = nused ? nused : 64;
        while (n <= (size_t)owner)
            n *= 2;
        int64_t *grown = realloc(used_by, n * sizeof(int64_t));
        if (grown == NULL)
            return;
        memset(grown + nused, 0, (n - nused) * sizeof(int64_t));
        used_by = grown;
        nused = n;
    }
    used_by[owner] += delta;
}

static void account(int owner, int64_t delta) {
    if (!rh_track)
        return;
    pthread_mutex_lock(&lock);
    account_locked(owner, delta);
    pthread_mutex_unlock(&lock);
}

/* forget the counts (a new run) */
void rh_reset_used(void) {
    pthread_mutex_lock(&lock);
    if (used_by != NULL)
        memset(used_by, 0, nused * sizeof(int64_t));
    pthread_mutex_unlock(&lock);
}

/* bytes of numpy data rank `owner - 1` holds (0: smpy's own), while rh_track is set */
int64_t rh_used(int owner) {
    pthread_mutex_lock(&lock);
    int64_t v = (owner >= 0 && (size_t)owner < nused) ? used_by[owner] : 0;
    pthread_mutex_unlock(&lock);
    return v > 0 ? v : 0;
}

static arena *arena_of(int owner) {  /* lock held; NULL when out of memory */
    if (owner < 0)
        owner = 0;
    if ((size_t)owner >= narenas) {
        size_t n = narenas ? narenas : 16;
        while (n <= (size_t)owner)
            n *= 2;
        arena *grown = realloc(arenas, n * sizeof(arena));
        if (grown == NULL)
            return NULL;
        memset(grown + narenas, 0, (n - narenas) * sizeof(arena));
        arenas = grown;
        narenas = n;
    }
    arena *a = &arenas[owner];
    if (a->thresh == 0)
        a->thresh = RH_LARGE;
    return a;
}

/* lock held: reserve the arena's heap on its first heap request (a rank whose large arrays
 * are all mapped never needs one) */
static int reserve(arena *a) {
    if (a->base != NULL)
        return 1;
    void *m = mmap(NULL, RH_RESERVE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return 0;
    a->base = a->top = a->brk = m;
    return 1;
}

static size_t top_bytes(arena *a) { return (size_t)(a->brk - a->top); }

static void unlink_free(arena *a, chunk *c) {
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        a->free_list = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->free = 0;
    a->free_bytes -= c->size;
    rh_cached -= c->size;
}

static void link_free(arena *a, chunk *c) {
    c->free = 1;
    c->prev = NULL;
    c->next = a->free_list;
    if (a->free_list != NULL)
        a->free_list->prev = c;
    a->free_list = c;
    a->free_bytes += c->size;
    rh_cached += c->size;
}

static chunk *next_of(arena *a, chunk *c) {
    char *n = (char *)c + c->size;
    return n < a->top ? (chunk *)n : NULL;
}

static void set_chunk(chunk *c, size_t size, size_t prev_size, int owner) {
    c->size = size;
    c->prev_size = prev_size;
    c->owner = owner;
    c->free = 0;
    c->next = c->prev = NULL;
    TAG_OF(c) = TAG_CHUNK;
}

static void *mapped_alloc(size_t size) {
    size_t cap = up(size + RH_HDR, page);
    void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    chunk *c = m;
    set_chunk(c, cap, 0, rh_owner);
    TAG_OF(c) = TAG_MAPPED;
    __atomic_add_fetch(&rh_fresh, 1, __ATOMIC_RELAXED);
    account(rh_owner, (int64_t)cap);
    return (char *)c + RH_HDR;
}

/* lock held: a chunk of `need` bytes (header included) from arena a, or NULL; *dirty: how
 * many of its bytes, from its start, may hold old data (the rest was never touched since the
 * heap grew or was trimmed over it, and reads as zero) */
static chunk *heap_alloc(arena *a, int owner, size_t need, size_t *dirty) {
    *dirty = need;
    chunk *best = NULL;
    for (chunk *c = a->free_list; c != NULL; c = c->next)
        if (c->size >= need && (best == NULL || c->size < best->size))
            best = c;
    if (best != NULL) {
        unlink_free(a, best);
        if (best->size >= need + RH_LARGE) {  /* split: the tail stays free */
            chunk *rest = (chunk *)((char *)best + need);
            set_chunk(rest, best->size - need, need, owner);
            chunk *after = next_of(a, rest);
            if (after != NULL)
                after->prev_size = rest->size;
            else
                a->last = rest->size;
            best->size = need;
            link_free(a, rest);
        }
        rh_reused++;
        return best;
    }
    /* from the top chunk, growing the heap into fresh pages if needed */
    if ((size_t)(a->top - a->base) + need > RH_RESERVE)
        return NULL;
    *dirty = a->brk > a->top ? (size_t)(a->brk - a->top) : 0;
    if (*dirty > need)
        *dirty = need;
    if (top_bytes(a) < need) {
        char *want = a->top + need + RH_TOP_PAD;
        char *limit = a->base + RH_RESERVE;
        char *brk = want < limit ? (char *)up((uintptr_t)want, page) : limit;
        rh_cached += (size_t)(brk - a->brk);
        a->brk = brk;
        __atomic_add_fetch(&rh_fresh, 1, __ATOMIC_RELAXED);  /* also counted outside the lock */
    } else {
        rh_reused++;
    }
    chunk *c = (chunk *)a->top;
    set_chunk(c, need, a->last, owner);
    a->last = need;
    a->top += need;
    rh_cached -= need;
    return c;
}

static void trim_top(arena *a) {  /* lock held: glibc's systrim, keeping M_TOP_PAD */
    char *keep = (char *)up((uintptr_t)(a->top + RH_TOP_PAD), page);
    if (keep < a->brk) {
        madvise(keep, (size_t)(a->brk - keep), MADV_DONTNEED);
        rh_cached -= (size_t)(a->brk - keep);
        a->brk = keep;
        rh_unmapped++;
    }
}

static void heap_free(arena *a, chunk *c) {  /* lock held */
    /* coalesce with the free chunk before, then with the one after or the top */
    if (c->prev_size != 0) {
        chunk *before = (chunk *)((char *)c - c->prev_size);
        if (before->free) {
            unlink_free(a, before);
            before->size += c->size;
            c = before;
        }
    }
    chunk *after = next_of(a, c);
    if (after != NULL && after->free) {
        unlink_free(a, after);
        c->size += after->size;
        after = next_of(a, c);
    }
    if (after == NULL) {  /* borders the top chunk: becomes part of it */
        a->top = (char *)c;
        a->last = c->prev_size;
        rh_cached += c->size;
        if (top_bytes(a) >= 2 * a->thresh || rh_cached > rh_global_cap)
            trim_top(a);
        return;
    }
    after->prev_size = c->size;
    link_free(a, c);
    if (rh_cached > rh_global_cap && c->size > 2 * page) {
        /* over the total: keep the chunk free but give its pages back */
        madvise((char *)up((uintptr_t)c + RH_HDR, page),
                (size_t)((char *)c + c->size - (char *)up((uintptr_t)c + RH_HDR, page)) / page * page,
                MADV_DONTNEED);
    }
}

static void *small_alloc(size_t size, int zero) {
    char *p = zero ? calloc(1, size + RH_SHDR) : malloc(size + RH_SHDR);
    if (p == NULL)
        return NULL;
    ((uint64_t *)(p + RH_SHDR))[-1] = TAG_SMALL;
    ((int64_t *)p)[0] = rh_owner;
    account(rh_owner, (int64_t)malloc_usable_size(p));
    return p + RH_SHDR;
}

/* a large request; *dirty: how many of the user's bytes may not be zero (glibc's calloc
 * clears only those: a mapped chunk is all zero, and so is what the heap grows into) */
static void *large_alloc(size_t size, size_t *dirty) {
    *dirty = size;
    pthread_mutex_lock(&lock);
    if (rh_cached > rh_global_cap) {  /* over the total: the shared allocator */
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    arena *a = arena_of(rh_owner);
    if (a == NULL) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    if (size + 16 >= a->thresh) {  /* glibc: the request (with its chunk header) >= threshold */
        pthread_mutex_unlock(&lock);
        *dirty = 0;
        return mapped_alloc(size);
    }
    size_t chunk_dirty = 0;
    chunk *c = reserve(a) ? heap_alloc(a, rh_owner, up(size + RH_HDR, RH_ALIGN), &chunk_dirty) : NULL;
    if (c != NULL && rh_track)
        account_locked(rh_owner, (int64_t)c->size);
    pthread_mutex_unlock(&lock);
    if (c == NULL)
        return NULL;
    *dirty = chunk_dirty > RH_HDR ? chunk_dirty - RH_HDR : 0;
    if (*dirty > size)
        *dirty = size;
    return (char *)c + RH_HDR;
}

/* numpy's default handler advises transparent huge pages on every block of 4 MiB or more
 * it mallocs or callocs (not on a realloc), from the first page boundary after the block's
 * start (one page in when the start is aligned). A rank's real process does this; so does the
 * model, on whatever memory the block came from. An advice inside an arena's heap splits the
 * reservation's mapping as it splits a real process's heap; all ranks' splits add up in one
 * process, so past RH_MAX_HEAP_ADVICE of them (each adds at most two mappings, far below
 * vm.max_map_count) heap blocks are no longer advised: by then a rank's heap ranges that
 * hold large blocks have long been advised, and the flag stays on a range once set. */
#define RH_MAX_HEAP_ADVICE 8192
static void advise(void *p, size_t size) {
#ifdef MADV_HUGEPAGE
    if (!rh_hugepage || size < HUGE_ADVICE)
        return;
    uint64_t tag = ((uint64_t *)p)[-1];
    if (tag == TAG_CHUNK && __atomic_load_n(&rh_advised, __ATOMIC_RELAXED) >= RH_MAX_HEAP_ADVICE)
        return;
    uintptr_t offset = 4096 - (uintptr_t)p % 4096;
    if (madvise((char *)p + offset, size - offset, MADV_HUGEPAGE) == 0 && tag == TAG_CHUNK)
        __atomic_add_fetch(&rh_advised, 1, __ATOMIC_RELAXED);
#else
    (void)p;
    (void)size;
#endif
}

/* smpy/prefault-arrays: a malloc'ed block (np.empty, np.ones, np.full, the result of an
 * operation or a copy: numpy writes every byte of such a block, or the program does) that
 * was mapped fresh is faulted in by one madvise(MADV_POPULATE_WRITE) (Linux 5.14) instead of
 * one page fault per page as the program first writes it: the same pages, the same resident
 * memory once written, a third less system time per byte on the VMs measured. A calloc'ed
 * block (np.zeros) is left alone: it is often written sparsely or not at all. Only where the
 * page-fault cost cannot change a prediction (smpi/simulate-computation off, rankheap.py);
 * a kernel without the advice fails it and the pages fault in as before. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static void prefault(void *p) {
    if (!rh_prefault || ((uint64_t *)p)[-1] != TAG_MAPPED)
        return;
    chunk *c = (chunk *)((char *)p - RH_HDR);
    if (madvise((void *)c, c->size, MADV_POPULATE_WRITE) == 0)
        __atomic_add_fetch(&rh_prefaulted, 1, __ATOMIC_RELAXED);
}

static void *alloc_any(size_t size) {
    if (size >= RH_LARGE) {
        size_t dirty;
        void *p = large_alloc(size, &dirty);
        if (p != NULL)
            return p;
    }
    return small_alloc(size, 0);
}

static void *rh_malloc(void *ctx, size_t size) {
    (void)ctx;
    void *p = alloc_any(size);
    if (p != NULL) {
        advise(p, size);
        prefault(p);
    }
    return p;
}

static void *rh_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize != 0 && nelem > SIZE_MAX / elsize)
        return NULL;
    size_t size = nelem * elsize;
    void *p = NULL;
    if (size >= RH_LARGE) {
        size_t dirty;
        p = large_alloc(size, &dirty);
        if (p != NULL && dirty > 0)
            memset(p, 0, dirty);
    }
    if (p == NULL)
        p = small_alloc(size, 1);
    if (p != NULL)
        advise(p, size);
    return p;
}

static void rh_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    (void)size;
    if (ptr == NULL)
        return;
    uint64_t tag = ((uint64_t *)ptr)[-1];
    chunk *c = (chunk *)((char *)ptr - RH_HDR);
    if (tag == TAG_MAPPED) {
        pthread_mutex_lock(&lock);
        arena *a = arena_of(c->owner);
        /* glibc's dynamic threshold: freeing a mapped chunk raises it to the chunk's size */
        if (a != NULL && c->size > a->thresh && c->size <= RH_MAX_THRESH)
            a->thresh = c->size;
        rh_unmapped++;
        if (rh_track)
            account_locked(c->owner, -(int64_t)c->size);
        pthread_mutex_unlock(&lock);
        munmap(c, c->size);
    } else if (tag == TAG_CHUNK) {
        pthread_mutex_lock(&lock);
        if (rh_track)
            account_locked(c->owner, -(int64_t)c->size);
        heap_free(&arenas[c->owner], c);
        pthread_mutex_unlock(&lock);
    } else {
        char *p = (char *)ptr - RH_SHDR;
        account((int)((int64_t *)p)[0], -(int64_t)malloc_usable_size(p));
        free(p);
    }
}

static size_t usable(void *ptr) {
    uint64_t tag = ((uint64_t *)ptr)[-1];
    if (tag == TAG_SMALL)
        return malloc_usable_size((char *)ptr - RH_SHDR) - RH_SHDR;
    return ((chunk *)((char *)ptr - RH_HDR))->size - RH_HDR;
}

static void *rh_realloc(void *ctx, void *ptr, size_t new_size) {
    (void)ctx;
    if (ptr == NULL)
        return alloc_any(new_size);
    size_t old = usable(ptr);
    if (((uint64_t *)ptr)[-1] == TAG_SMALL && new_size < RH_LARGE) {
        char *old_p = (char *)ptr - RH_SHDR;
        int owner = (int)((int64_t *)old_p)[0];
        int64_t before = (int64_t)malloc_usable_size(old_p);
        char *p = realloc(old_p, new_size + RH_SHDR);
        if (p == NULL)
            return NULL;
        account(owner, (int64_t)malloc_usable_size(p) - before);
        return p + RH_SHDR;
    }
    if (((uint64_t *)ptr)[-1] != TAG_SMALL && new_size <= old && new_size >= RH_LARGE)
        return ptr;
    void *q = alloc_any(new_size);
    if (q == NULL)
        return NULL;
    memcpy(q, ptr, old < new_size ? old : new_size);
    rh_free(NULL, ptr, old);
    return q;
}

rh_handler rh_numpy_handler = {
    "smpy_rank_heaps",
    1,
    {NULL, rh_malloc, rh_calloc, rh_realloc, rh_free},
};

/* give back the free memory of every arena and forget the thresholds (end of a run);
 * chunks still in use stay valid */
void rh_release(void) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < narenas; i++) {
        arena *a = &arenas[i];
        a->thresh = RH_LARGE;
        if (a->base == NULL)
            continue;
        for (chunk *c = a->free_list; c != NULL; c = c->next) {
            char *from = (char *)up((uintptr_t)c + RH_HDR, page);
            char *to = (char *)c + c->size;
            if (to > from + page)
                madvise(from, (size_t)(to - from) / page * page, MADV_DONTNEED);
        }
        if (a->brk > a->top) {
            char *from = (char *)up((uintptr_t)a->top + RH_HDR, page);
            if (a->brk > from)
                madvise(from, (size_t)(a->brk - from), MADV_DONTNEED);
            a->brk = a->top;
        }
    }
    rh_cached = 0;
    for (size_t i = 0; i < narenas; i++)
        rh_cached += arenas[i].free_bytes;
    pthread_mutex_unlock(&lock);
}

void rh_init(size_t pagesize) { page = pagesize; }
