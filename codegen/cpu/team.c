/* PyShark's thread team: the runtime of the cpu backend's parallel loops.

   A compiled module calls three functions (codegen/cpu/emit_parfor.py):
     pysharkrt_parallel(fn, data, nthreads, flags)  run fn(data) on a team of nthreads
     pysharkrt_thread_num()                         this thread's number in its team
     pysharkrt_max_threads()                        the default team size
   (and the SIGINT functions at the end of this file), and this library,
   loaded with RTLD_GLOBAL before any module
   (codegen/cpu/team.py), defines them. Built with -DPYSHARK_TEAM_GOMP the
   three forward to libgomp instead (PYSHARK_THREADS=gomp, for A/B runs).

   Why not libgomp: its end-of-region barrier waits for every thread of the
   team, including one that the OS has not run yet, and its waiting threads
   spin a count of pause instructions (GOMP_SPINCOUNT, read once by
   whichever library loads libgomp first: Numba's omp layer shares it) that
   is milliseconds on one CPU and microseconds on another. Both cost
   PyShark 2-10x, one on an idle 16-core host, the other under load
   (docs/cpu-backend.md, "Threads and load").

   The algorithm. A region's blocks are claimed by the outlined function
   itself (static stealing: every block runs exactly once, whichever
   threads run the function), so a thread that never joins a region loses
   nothing. The team therefore needs no barrier, only a gate:
   - the caller (thread 0) publishes fn and data, opens the gate of region
     s (one 64-bit word: s, an open bit and how many workers are inside),
     bumps the region counter the workers wait on, and runs fn itself;
   - a worker enters by a compare-and-swap that counts it in, only while
     the gate is s's and open, runs fn, and counts itself out;
   - when the caller's fn returns, every block has been claimed: it closes
     the gate (no worker enters after that, so a descheduled worker cannot
     hold the region up) and waits only for the workers inside.
   Every wait spins for a time (PYSHARK_SPIN_US microseconds, default
   SPIN_US_DEFAULT; a clock, not a count of pauses), then yields the CPU
   until PYSHARK_YIELD_US (default YIELD_US_DEFAULT) have passed, and then
   sleeps on a futex; a wake is a system call only when someone sleeps. A
   worker that finds itself on its caller's CPU moves off it (move_off).
   This is the shape of TBB's and libomp's hybrid waits (spin, yield,
   block); the gate replaces the join barrier the way a completion counter
   does in work-stealing runtimes.

   Callers on several Python threads at once each get a team of their own
   (up to MAX_TEAMS teams; beyond that a region runs on its caller alone),
   a region inside a region runs on its thread alone, and a forked child
   starts with no teams (pthread_atfork). Workers block every signal, so a
   signal (Ctrl-C) goes to a Python thread. Linux only (futex); elsewhere
   team.py builds the libgomp variant. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#ifdef PYSHARK_TEAM_GOMP

extern void GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags);
extern int omp_get_thread_num(void);
extern int omp_get_max_threads(void);

EXPORT void pysharkrt_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags)
{
    GOMP_parallel(fn, data, nthreads, flags);
}
EXPORT int pysharkrt_thread_num(void) { return omp_get_thread_num(); }
EXPORT int pysharkrt_max_threads(void) { return omp_get_max_threads(); }
EXPORT const char *pysharkrt_team_kind(void) { return "gomp"; }

#else

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024        /* wrapper/backend.MAX_NUM_THREADS */
#define MAX_TEAMS 8
#define SPIN_US_DEFAULT 300
#define YIELD_US_DEFAULT 3000
#define LINE 64
#define OPEN ((uint64_t)1 << 31)
#define INSIDE (OPEN - 1)
#define STACK_BYTES ((size_t)8 << 20)

typedef void (*region_fn)(void *);

struct team {
    pthread_mutex_t busy;               /* held by the caller running a region */
    int nworkers;                       /* workers started: numbers 1..nworkers */
    region_fn fn;                       /* the region: written before its gate opens */
    void *data;
    int nthreads;
    _Alignas(LINE) _Atomic uint32_t seq;     /* the last region opened (workers wait on it) */
    _Atomic int32_t sleepers;                /* workers asleep on seq */
    _Alignas(LINE) _Atomic uint64_t gate;    /* region << 32 | OPEN | workers inside */
    _Alignas(LINE) _Atomic uint32_t left;    /* bumped by the last worker out of a closed gate */
    _Atomic int32_t caller_sleeps;           /* the caller is asleep on `left` */
    _Atomic int32_t caller_cpu;              /* where the caller opened the region (-1: unknown) */
};

struct worker_start {
    struct team *team;
    int num;
    uint32_t seen;
};

static struct team *_Atomic teams[MAX_TEAMS];
static pthread_mutex_t teams_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long spin_ns = -1;
static _Atomic long yield_ns = -1;
static _Atomic int max_threads = 0;
static _Atomic int thread_limit = 0;
static __thread int my_num = 0;
static __thread int in_region = 0;

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
    return syscall(SYS_futex, (uint32_t *)word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    long v = strtol(s, &end, 10);     /* OMP_NUM_THREADS may be a list: its first number */
    if (end == s || v < 0 || v > INT_MAX)
        return fallback;
    return (int)v;
}

static long budget_ns(_Atomic long *cache, const char *name, int fallback_us)
{
    long ns = atomic_load_explicit(cache, memory_order_relaxed);
    if (ns < 0) {
        ns = (long)env_int(name, fallback_us) * 1000L;
        atomic_store_explicit(cache, ns, memory_order_relaxed);
    }
    return ns;
}

/* Whether the awaited change has happened (the two waits of the team). */
struct awaited {
    _Atomic uint32_t *word;     /* changed: *word != old */
    uint32_t old;
    _Atomic uint64_t *gate;     /* or: no worker inside the gate */
};

static inline int arrived(const struct awaited *w)
{
    if (w->gate)
        return (atomic_load_explicit(w->gate, memory_order_acquire) & INSIDE) == 0;
    return atomic_load_explicit(w->word, memory_order_acquire) != w->old;
}

/* Waits for `w` by spinning (pause) for PYSHARK_SPIN_US, then yielding the
   CPU (sched_yield: another runnable thread on this CPU runs first) until
   PYSHARK_YIELD_US have passed; 1 if it arrived, 0 if the caller should
   sleep. The yield phase keeps a worker ready through a host-side gap of
   a few milliseconds on an idle machine (a futex wake costs 0.1 ms in a VM)
   without taking a busy machine's CPU from anyone who needs it. */
static int wait_a_while(const struct awaited *w)
{
    long spin = budget_ns(&spin_ns, "PYSHARK_SPIN_US", SPIN_US_DEFAULT);
    long yield = budget_ns(&yield_ns, "PYSHARK_YIELD_US", YIELD_US_DEFAULT);
    long t0 = now_ns();
    for (;;) {
        for (int k = 0; k < 64; k++) {
            if (arrived(w))
                return 1;
            relax();
        }
        long t = now_ns() - t0;
        if (t >= spin) {
            if (t >= yield)
                return 0;
            sched_yield();
        }
    }
}

/* Moves this worker off `cpu` when it runs there: the CPU its region's
   caller runs on. A worker woken from its futex is placed by the kernel,
   and for some milliseconds after other threads were busy (NumPy's
   OpenBLAS workers spinning after a call) Linux's wake-up placement stopped
   looking for an idle CPU (its idle search is cut short while the cache
   domain's recent utilisation is high) and queued the worker on the
   caller's CPU: the caller then ran every block itself, and the region took
   its one-thread time until the load balancer moved a thread on a later
   tick (2-core Zen 5 VM: backprop at 2^16 inputs 0.34-0.43 ms a call for 6
   to 24 calls after a NumPy call, 0.19-0.21 ms otherwise; Numba's libgomp
   workers were not held up). Excluding the CPU from this thread's
   affinity makes the kernel migrate it at once; the allowed set is then
   restored, which moves nothing. Only this library's own workers are
   moved, never the caller. */
static void move_off(int cpu)
{
    cpu_set_t mine, other;
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getcpu() != cpu)
        return;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || !CPU_ISSET(cpu, &mine)
        || CPU_COUNT(&mine) < 2)
        return;
    other = mine;
    CPU_CLR(cpu, &other);
    if (sched_setaffinity(0, sizeof other, &other) == 0)
        sched_setaffinity(0, sizeof mine, &mine);
}

/* move_off for the tests (tests/codegen/cpu/test_team.py) */
EXPORT void pysharkrt_move_off(int cpu) { move_off(cpu); }

static void run_alone(region_fn fn, void *data)
{
    int num = my_num, inside = in_region;
    my_num = 0;
    in_region = 1;
    fn(data);
    my_num = num;
    in_region = inside;
}

static void *worker(void *arg)
{
    struct worker_start start = *(struct worker_start *)arg;
    free(arg);
    struct team *t = start.team;
    uint32_t seen = start.seen;
    my_num = start.num;
    in_region = 1;
    for (;;) {
        struct awaited next = {&t->seq, seen, NULL};
        if (!wait_a_while(&next)) {
            atomic_fetch_add(&t->sleepers, 1);
            while (atomic_load(&t->seq) == seen)
                futex(&t->seq, FUTEX_WAIT, seen);
            atomic_fetch_sub(&t->sleepers, 1);
        }
        uint32_t s = atomic_load_explicit(&t->seq, memory_order_acquire);
        seen = s;
        uint64_t g = atomic_load_explicit(&t->gate, memory_order_acquire);
        int entered = 0;
        while ((uint32_t)(g >> 32) == s && (g & OPEN)) {
            if (atomic_compare_exchange_weak_explicit(&t->gate, &g, g + 1, memory_order_acq_rel,
                                                      memory_order_acquire)) {
                entered = 1;
                break;
            }
        }
        if (!entered)
            continue;                   /* closed already: the caller ran its blocks */
        if (my_num < t->nthreads) {
            move_off(atomic_load_explicit(&t->caller_cpu, memory_order_relaxed));
            t->fn(t->data);
        }
        uint64_t before = atomic_fetch_sub(&t->gate, 1);
        if ((before & INSIDE) == 1 && !(before & OPEN) && atomic_load(&t->caller_sleeps)) {
            atomic_fetch_add(&t->left, 1);
            futex(&t->left, FUTEX_WAKE, 1);
        }
    }
    return NULL;
}

/* Starts workers up to `want` (fewer when the system refuses threads). */
static void grow(struct team *t, int want)
{
    if (want > MAX_THREADS - 1)
        want = MAX_THREADS - 1;
    int limit = atomic_load(&thread_limit);
    if (limit > 0 && want > limit - 1)
        want = limit - 1;
    if (t->nworkers >= want)
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = 0;
    if (pthread_attr_getstacksize(&attr, &stack) == 0 && stack < STACK_BYTES)
        pthread_attr_setstacksize(&attr, STACK_BYTES);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (t->nworkers < want) {
        struct worker_start *w = malloc(sizeof *w);
        if (!w)
            break;
        w->team = t;
        w->num = t->nworkers + 1;
        w->seen = atomic_load(&t->seq);
        pthread_t th;
        if (pthread_create(&th, &attr, worker, w) != 0) {
            free(w);
            break;
        }
        t->nworkers++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A free team, created on first need; NULL when MAX_TEAMS callers run. */
static struct team *take_team(void)
{
    for (int i = 0; i < MAX_TEAMS; i++) {
        struct team *t = atomic_load(&teams[i]);
        if (!t) {
            pthread_mutex_lock(&teams_lock);
            t = atomic_load(&teams[i]);
            if (!t) {
                t = aligned_alloc(LINE, (sizeof(struct team) + LINE - 1) / LINE * LINE);
                if (!t) {
                    pthread_mutex_unlock(&teams_lock);
                    return NULL;
                }
                memset(t, 0, sizeof *t);
                pthread_mutex_init(&t->busy, NULL);
                atomic_store(&teams[i], t);
            }
            pthread_mutex_unlock(&teams_lock);
        }
        if (pthread_mutex_trylock(&t->busy) == 0)
            return t;
    }
    return NULL;
}

EXPORT void pysharkrt_parallel(region_fn fn, void *data, unsigned nthreads, unsigned flags)
{
    (void)flags;
    struct team *t;
    if (nthreads <= 1 || in_region || !(t = take_team())) {
        run_alone(fn, data);
        return;
    }
    if (nthreads > MAX_THREADS)
        nthreads = MAX_THREADS;
    grow(t, (int)nthreads - 1);
    if (t->nworkers == 0) {
        pthread_mutex_unlock(&t->busy);
        run_alone(fn, data);
        return;
    }
    uint32_t s = atomic_load_explicit(&t->seq, memory_order_relaxed) + 1;
    t->fn = fn;
    t->data = data;
    t->nthreads = (int)nthreads;
    atomic_store_explicit(&t->caller_cpu, sched_getcpu(), memory_order_relaxed);
    atomic_store_explicit(&t->gate, ((uint64_t)s << 32) | OPEN, memory_order_release);
    atomic_store(&t->seq, s);
    if (atomic_load(&t->sleepers) > 0)
        futex(&t->seq, FUTEX_WAKE, INT_MAX);
    run_alone(fn, data);
    uint64_t before = atomic_fetch_and(&t->gate, ~OPEN);
    struct awaited empty = {NULL, 0, &t->gate};
    if ((before & INSIDE) && !wait_a_while(&empty)) {
        atomic_store(&t->caller_sleeps, 1);
        for (;;) {
            uint32_t seen = atomic_load(&t->left);
            if ((atomic_load(&t->gate) & INSIDE) == 0)
                break;
            futex(&t->left, FUTEX_WAIT, seen);
        }
        atomic_store(&t->caller_sleeps, 0);
    }
    pthread_mutex_unlock(&t->busy);
}

EXPORT int pysharkrt_thread_num(void) { return my_num; }

EXPORT int pysharkrt_max_threads(void)
{
    int n = atomic_load_explicit(&max_threads, memory_order_relaxed);
    if (n > 0)
        return n;
    n = env_int("OMP_NUM_THREADS", 0);
    if (n <= 0) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
        if (n <= 0)
            n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    if (n <= 0)
        n = 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    atomic_store_explicit(&max_threads, n, memory_order_relaxed);
    return n;
}

EXPORT const char *pysharkrt_team_kind(void) { return "team"; }

/* The number of workers started in all teams (tests). */
EXPORT int pysharkrt_team_workers(void)
{
    int n = 0;
    for (int i = 0; i < MAX_TEAMS; i++) {
        struct team *t = atomic_load(&teams[i]);
        if (t)
            n += t->nworkers;
    }
    return n;
}

/* A forked child has only the forking thread: it starts without teams
   (the parent's are leaked in the child, as their workers do not exist). */
static void forget_teams(void)
{
    for (int i = 0; i < MAX_TEAMS; i++)
        atomic_store(&teams[i], NULL);
    pthread_mutex_init(&teams_lock, NULL);
    in_region = 0;
    my_num = 0;
}

__attribute__((constructor)) static void team_init(void)
{
    int limit = env_int("OMP_THREAD_LIMIT", 0);
    atomic_store(&thread_limit, limit);
    pthread_atfork(NULL, NULL, forget_teams);
}

#endif

/* -- Ctrl-C for calls from Python: one handler per process ------------------------

   An entry called with ctx->sigint == 2 (the Python wrapper's calls from
   the main thread) does not install a SIGINT handler of its own for the
   call (two sigaction system calls, 0.4 us a call in these VMs: more than
   a small entry's whole work): it calls pysharkrt_sigint_enter, which
   checks at most every SIGINT_RECHECK_NS that this library's handler is
   the process's SIGINT action (installing it, chained to the action it
   displaces, when another one that is neither SIG_DFL nor SIG_IGN is
   there) and counts the call in. The handler sets pysharkrt_sigint_flag
   while some call is in, and always runs the displaced action (Python's
   handler, so Python raises KeyboardInterrupt as before); the entry polls
   the flag (codegen/cpu/emit_unwind.py). The handler stays installed
   between calls. If a program replaces it (Python's signal.signal does),
   a call within SIGINT_RECHECK_NS of the last check is not stopped by
   Ctrl-C but runs to its end, and the next check installs the handler
   again in front of the new action; SIG_IGN and SIG_DFL are left alone
   (then nothing is armed). ctx->sigint == 1 (C callers, module.h) keeps
   the per-call handler that is installed and put back around each call. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#define SIGINT_RECHECK_NS 10000000L     /* 10 ms */

EXPORT _Atomic int pysharkrt_sigint_flag;
static _Atomic int sigint_active;             /* calls counted in */
static _Atomic long sigint_checked;           /* when the handler's place was last checked */
static _Atomic int sigint_ok;                 /* what that check found: the handler in place */
static _Atomic long sigint_checks;            /* sigaction queries made (tests) */
static struct sigaction sigint_chain;         /* the action the handler displaced */
static pthread_mutex_t sigint_lock = PTHREAD_MUTEX_INITIALIZER;

/* the coarse clock (a few ms of resolution, enough for SIGINT_RECHECK_NS)
   reads the kernel's last tick: 20 ns a call less than CLOCK_MONOTONIC here */
#ifdef CLOCK_MONOTONIC_COARSE
#define SIGINT_CLOCK CLOCK_MONOTONIC_COARSE
#else
#define SIGINT_CLOCK CLOCK_MONOTONIC
#endif

static long sigint_now(void)
{
    struct timespec ts;
    clock_gettime(SIGINT_CLOCK, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static _Atomic int sigint_depth;              /* the handler is running (a chain back to it) */

static void sigint_handler(int sig, siginfo_t *info, void *uc)
{
    if (atomic_load(&sigint_active) > 0)
        atomic_store(&pysharkrt_sigint_flag, 1);
    /* a per-call handler (ctx->sigint == 1) displaced while this one was in
       place chains back here: run the displaced action once, not forever */
    if (atomic_fetch_add(&sigint_depth, 1) == 0) {
        if (sigint_chain.sa_flags & SA_SIGINFO) {
            if (sigint_chain.sa_sigaction)
                sigint_chain.sa_sigaction(sig, info, uc);
        } else if (sigint_chain.sa_handler != SIG_IGN && sigint_chain.sa_handler != SIG_DFL) {
            sigint_chain.sa_handler(sig);
        }
    }
    atomic_fetch_sub(&sigint_depth, 1);
}

/* Whether the handler is in place (installing it when it may be); under sigint_lock. */
static int sigint_install(void)
{
    struct sigaction cur, mine;
    atomic_fetch_add(&sigint_checks, 1);
    if (sigaction(SIGINT, NULL, &cur) != 0)
        return 0;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == sigint_handler)
        return 1;
    if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
        return 0;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = sigint_handler;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&mine.sa_mask);
    sigint_chain = cur;         /* not installed yet: no handler reads it meanwhile */
    return sigaction(SIGINT, &mine, NULL) == 0;
}

/* 1 when the call is counted in (it must call pysharkrt_sigint_leave), 0 when
   SIGINT cannot stop it (ignored, default, or sigaction failed). */
EXPORT int pysharkrt_sigint_enter(void)
{
    long now = sigint_now(), seen = atomic_load(&sigint_checked);
    if (seen == 0 || now - seen > SIGINT_RECHECK_NS) {
        /* a "no" (SIGINT ignored, say) is kept as long as a "yes": a
           process that ignores SIGINT makes no system call per call either */
        pthread_mutex_lock(&sigint_lock);
        atomic_store(&sigint_ok, sigint_install());
        atomic_store(&sigint_checked, now);
        pthread_mutex_unlock(&sigint_lock);
    }
    if (!atomic_load(&sigint_ok))
        return 0;
    if (atomic_fetch_add(&sigint_active, 1) == 0)
        atomic_store(&pysharkrt_sigint_flag, 0);
    return 1;
}

EXPORT void pysharkrt_sigint_leave(void)
{
    if (atomic_fetch_sub(&sigint_active, 1) == 1)
        atomic_store(&pysharkrt_sigint_flag, 0);
}

/* How many times the handler's place was checked with sigaction (tests). */
EXPORT long pysharkrt_sigint_checks(void) { return atomic_load(&sigint_checks); }

/* A forked child has no calls in; it checks the handler again on its first. */
static void sigint_forget(void)
{
    atomic_store(&sigint_active, 0);
    atomic_store(&pysharkrt_sigint_flag, 0);
    atomic_store(&sigint_checked, 0);
    pthread_mutex_init(&sigint_lock, NULL);
}

__attribute__((constructor)) static void sigint_init(void)
{
    pthread_atfork(NULL, NULL, sigint_forget);
}
