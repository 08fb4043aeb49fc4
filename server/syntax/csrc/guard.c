/*
 * The allocator tree-sitter calls in op2, and a parse that can be abandoned
 * the moment it asks for more memory than its text allows.
 *
 * tree-sitter's progress callback comes once per hundred parse actions, and
 * some of its work runs between two calls with no bound: the walk over the
 * merged parse stack when the text ends (`ts_stack_pop_all` from
 * `ts_parser__accept`) is quadratic in a long enough run of error recovery
 * (finding F13 in wip/fuzz-findings.md: 1 MB of text asked for 12 GB). The
 * only code of ours that such a walk calls is the allocator, and an
 * allocator cannot fail (tree-sitter treats a null pointer as fatal). So
 * the allocator here, past the parse's cap, jumps (`longjmp`) out of the
 * library back to `op2_ts_parse_guarded`, which called it. Between the two
 * there are only this file's frames and tree-sitter's, all C: nothing of
 * Rust's is skipped.
 *
 * What the abandoned parse held cannot be freed by tree-sitter (its state
 * is half way through a change), so every block allocated on the thread
 * while a guard is open is recorded in a set, and abandoning frees them all.
 * The parser itself is made inside the guard (see the Rust side,
 * `crate::memory`), so that it is one of them. A block freed while the guard
 * is open leaves the set; when the parse ends normally the set is dropped
 * and the blocks (the new tree) are ordinary blocks again, to be freed on
 * any thread.
 *
 * Every request, guarded or not, adds its size to a counter of its thread
 * (gross: a realloc counts its new size, a free takes nothing off), which
 * the progress callback reads to bound a parse's memory more finely. The
 * set's own tables count too, so that the cap bounds all a parse costs.
 *
 * While the progress callback runs (Rust code of the caller's), the guard
 * is paused: nothing allocated then is recorded, and no request jumps, so
 * that a jump never crosses a Rust frame and an abandon never frees what
 * Rust holds.
 */

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <tree_sitter/api.h>

/* A set of block addresses: open addressing, linear probing, a power of
 * two slots, at most half of them used or deleted; rebuilt, when that
 * half is reached, with a third or less of the slots live. */
#define EMPTY ((void *)0)
#define DELETED ((void *)1)

struct guard {
    /* The thread's counter when the guard opened, and how far past it the
     * parse may go. */
    uint64_t base;
    uint64_t cap;
    /* Where to jump when the cap is passed; null outside the parse call. */
    jmp_buf *target;
    /* The progress callback is running: nothing is recorded, nothing
     * jumps. */
    int paused;
    void **slots;
    size_t mask;  /* slots - 1 */
    int shift;    /* 64 - log2(slots) */
    size_t used; /* live and deleted slots */
    size_t live;
};

static _Thread_local uint64_t requested;
static _Thread_local struct guard *open_guard;

static void out_of_memory(size_t bytes) {
    fprintf(stderr, "tree-sitter failed to allocate %zu bytes\n", bytes);
    abort();
}

static size_t slot_of(const struct guard *guard, const void *block) {
    uint64_t key = (uint64_t)(uintptr_t)block >> 4;
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> guard->shift);
}

static void place(struct guard *guard, void *block) {
    size_t at = slot_of(guard, block);
    while (guard->slots[at] != EMPTY && guard->slots[at] != DELETED) {
        at = (at + 1) & guard->mask;
    }
    if (guard->slots[at] == EMPTY) {
        guard->used++;
    }
    guard->slots[at] = block;
    guard->live++;
}

/* The slots the set is rebuilt with, holding `live` blocks and one more:
 * the least power of two, at least 64, of which they fill a third or less. */
static size_t slots_for(size_t live) {
    size_t slots = 64;
    while (slots / 3 < live + 1) {
        if (slots > SIZE_MAX / (2 * sizeof(void *))) {
            out_of_memory(SIZE_MAX);
        }
        slots *= 2;
    }
    return slots;
}

/* The bytes the next record will ask for, if it must rebuild the set. */
static size_t growth(const struct guard *guard) {
    if ((guard->used + 1) * 2 <= guard->mask + 1) {
        return 0;
    }
    return slots_for(guard->live) * sizeof(void *);
}

/* Makes room for one more block, rebuilding the set when half of its
 * slots are used or deleted. */
static void make_room(struct guard *guard) {
    if (growth(guard) == 0) {
        return;
    }
    size_t slots = slots_for(guard->live);
    void **old = guard->slots;
    size_t old_mask = guard->mask;
    guard->slots = calloc(slots, sizeof(void *));
    if (guard->slots == NULL) {
        out_of_memory(slots * sizeof(void *));
    }
    requested += (uint64_t)(slots * sizeof(void *));
    guard->mask = slots - 1;
    guard->shift = 64;
    for (size_t left = slots; left > 1; left /= 2) {
        guard->shift--;
    }
    guard->used = 0;
    guard->live = 0;
    for (size_t at = 0; at <= old_mask; at++) {
        if (old[at] != EMPTY && old[at] != DELETED) {
            place(guard, old[at]);
        }
    }
    free(old);
}

static void track(void *block) {
    struct guard *guard = open_guard;
    if (guard == NULL || guard->paused || block == NULL) {
        return;
    }
    make_room(guard);
    place(guard, block);
}

/* Takes `block` out of the open guard's set, if it is there. */
static void untrack(void *block) {
    struct guard *guard = open_guard;
    if (guard == NULL || block == NULL) {
        return;
    }
    size_t at = slot_of(guard, block);
    while (guard->slots[at] != EMPTY) {
        if (guard->slots[at] == block) {
            guard->slots[at] = DELETED;
            guard->live--;
            return;
        }
        at = (at + 1) & guard->mask;
    }
}

/* Counts a request of `bytes`, and jumps out of the guarded parse when it,
 * with the set's rebuild that recording it may need, takes the thread past
 * the cap. Called before anything is allocated, so that nothing is lost by
 * the jump. */
static void count(size_t bytes) {
    uint64_t now = requested + (uint64_t)bytes;
    if (now < requested) {
        now = UINT64_MAX;
    }
    requested = now;
    struct guard *guard = open_guard;
    if (guard == NULL || guard->target == NULL || guard->paused) {
        return;
    }
    uint64_t with_set = now + (uint64_t)growth(guard);
    if (with_set < now) {
        with_set = UINT64_MAX;
    }
    if (with_set - guard->base > guard->cap) {
        jmp_buf *target = guard->target;
        guard->target = NULL;
        longjmp(*target, 1);
    }
}

/* A block libc gave for a request of `bytes`: recorded, or the end of the
 * process if there was none (tree-sitter cannot handle a null pointer). */
static void *kept(void *block, size_t bytes) {
    if (block == NULL && bytes > 0) {
        out_of_memory(bytes);
    }
    track(block);
    return block;
}

void *op2_ts_malloc(size_t size) {
    count(size);
    return kept(malloc(size), size);
}

void *op2_ts_calloc(size_t count_of, size_t size) {
    size_t bytes = size != 0 && count_of > SIZE_MAX / size ? SIZE_MAX : count_of * size;
    count(bytes);
    return kept(calloc(count_of, size), bytes);
}

void *op2_ts_realloc(void *block, size_t size) {
    count(size);
    /* The old address is gone either way (or the process is); the new one
     * belongs to this thread's parse while a guard is open. */
    untrack(block);
    return kept(realloc(block, size), size);
}

void op2_ts_free(void *block) {
    untrack(block);
    free(block);
}

uint64_t op2_ts_requested(void) {
    return requested;
}

/* Opens a guard on this thread: every block allocated from now on is
 * recorded, and a parse run by `op2_ts_parse_guarded` may ask for at most
 * `cap` bytes more than the thread has asked for so far. Returns 0, or -1
 * when a guard is open already (guards do not nest). */
int op2_ts_guard_open(uint64_t cap) {
    if (open_guard != NULL) {
        return -1;
    }
    struct guard *guard = calloc(1, sizeof(struct guard));
    if (guard == NULL) {
        out_of_memory(sizeof(struct guard));
    }
    guard->slots = calloc(64, sizeof(void *));
    if (guard->slots == NULL) {
        out_of_memory(64 * sizeof(void *));
    }
    guard->mask = 63;
    guard->shift = 58;
    guard->base = requested;
    guard->cap = cap;
    open_guard = guard;
    return 0;
}

static void close_guard(int free_blocks) {
    struct guard *guard = open_guard;
    if (guard == NULL) {
        return;
    }
    open_guard = NULL;
    if (free_blocks) {
        for (size_t at = 0; at <= guard->mask; at++) {
            if (guard->slots[at] != EMPTY && guard->slots[at] != DELETED) {
                free(guard->slots[at]);
            }
        }
    }
    free(guard->slots);
    free(guard);
}

/* Pauses the open guard, if any, while code that is not tree-sitter's
 * runs inside the parse (the progress callback): what it allocates is not
 * recorded, and no request jumps. Frees are still taken out of the set. */
void op2_ts_guard_pause(void) {
    if (open_guard != NULL) {
        open_guard->paused = 1;
    }
}

void op2_ts_guard_resume(void) {
    if (open_guard != NULL) {
        open_guard->paused = 0;
    }
}

/* Closes the guard and keeps its blocks: they are ordinary blocks again. */
void op2_ts_guard_close(void) {
    close_guard(0);
}

/* Closes the guard and frees every block allocated under it and not freed
 * since: what a parse abandoned by the cap held. */
void op2_ts_guard_abandon(void) {
    close_guard(1);
}

/* Runs `ts_parser_parse_with_options` under the open guard. Returns 0 when
 * it returned (its tree, or null when the progress callback stopped it, in
 * `*tree`), 1 when it was abandoned for passing the cap (nothing in
 * `*tree`; the parser and everything it held are then lost and must be
 * freed with `op2_ts_guard_abandon`, never by tree-sitter), and -1 when no
 * guard is open. */
int op2_ts_parse_guarded(
    TSParser *parser,
    const TSTree *old_tree,
    TSInput input,
    TSParseOptions options,
    TSTree **tree
) {
    struct guard *guard = open_guard;
    if (guard == NULL) {
        return -1;
    }
    jmp_buf target;
    if (setjmp(target) != 0) {
        return 1;
    }
    guard->target = &target;
    *tree = ts_parser_parse_with_options(parser, old_tree, input, options);
    guard->target = NULL;
    return 0;
}
