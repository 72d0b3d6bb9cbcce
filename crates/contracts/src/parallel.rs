//! Independent items computed on a thread pool of a chosen size, the results in the items'
//! order: the same output whatever the thread count (each item is computed alone). Shared by the
//! stages that fan out (the horizontal's candidate angles, a batch's recordings).

use rayon::prelude::*;

/// `f` over `items` on at most `threads` threads (one: in this thread), results in order.
/// Called from inside another call's work (the horizontal's candidates each searching their
/// folds' roots), the items join the enclosing pool's threads instead of starting a pool of
/// their own: pools within pools put more threads than cores to work, each waiting on the
/// others (a candidate's fit took 1.6 s instead of 0.3 s on two cores).
pub fn map_in_order<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len()).max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    if rayon::current_thread_index().is_some() {
        return items.par_iter().map(&f).collect();
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(|| items.par_iter().map(&f).collect()),
        // No pool to be had (threads refused by the system): the same results, one by one.
        Err(_) => items.iter().map(f).collect(),
    }
}

/// Threads flexbench computes on: `FLEXBENCH_THREADS` when set to a positive number, else
/// `RAYON_NUM_THREADS` (the variable Rust's thread pools read), else the machine's cores.
/// Results do not depend on it (each item is computed alone, taken in order).
pub fn threads() -> usize {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
    };
    var("FLEXBENCH_THREADS")
        .or_else(|| var("RAYON_NUM_THREADS"))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// `a` and `b` side by side on the pool the caller is in (rayon's global pool otherwise), or
/// one after the other when [`threads`] is one: for two independent pieces of work too short
/// to start a pool of their own for.
pub fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if threads() == 1 {
        return (a(), b());
    }
    rayon::join(a, b)
}

/// [`map_samples`] for any number of items: on every core of the pool the caller is in
/// (rayon's global pool otherwise) unless [`threads`] is one; for items each worth handing out
/// (a fold zone's continuation), too few to start a pool of their own for.
pub fn map_each<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < 2 || threads() == 1 {
        return items.iter().map(f).collect();
    }
    items.par_iter().map(&f).collect()
}

/// Per-sample maps over fewer samples than this run on the calling thread (a fold's window of
/// a few dozen samples is not worth handing out).
pub const PER_SAMPLE_MIN: usize = 512;

/// `f` over a recording's samples, results in order: on every core (the enclosing pool's
/// threads when called from inside one, rayon's global pool otherwise) from
/// [`PER_SAMPLE_MIN`] samples on, unless [`threads`] is one. Each sample is computed alone, so the results are those of
/// one thread.
pub fn map_samples<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < PER_SAMPLE_MIN {
        return items.iter().map(f).collect();
    }
    map_each(items, f)
}

/// [`map_in_order`] in chunks of `chunk` items, `progress` told the fraction done after each
/// (from the calling thread): a long per-sample map that reports its progress.
pub fn map_in_order_chunked<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    chunk: usize,
    f: impl Fn(&T) -> R + Sync,
    progress: &mut dyn FnMut(f64),
) -> Vec<R> {
    let threads = threads.min(items.len()).max(1);
    let pool = match (threads, rayon::current_thread_index()) {
        (1, _) | (_, Some(_)) => None,
        _ => rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .ok(),
    };
    let mut out = Vec::with_capacity(items.len());
    for part in items.chunks(chunk.max(1)) {
        match (&pool, threads) {
            (Some(pool), _) => {
                out.extend(pool.install(|| part.par_iter().map(&f).collect::<Vec<_>>()))
            }
            // Inside another call's work: the enclosing pool's threads.
            (None, t) if t > 1 => out.extend(part.par_iter().map(&f).collect::<Vec<_>>()),
            _ => out.extend(part.iter().map(&f)),
        }
        progress(out.len() as f64 / items.len() as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    /// Results in the items' order on one thread and on four, and every item computed once.
    #[test]
    fn order_kept_on_any_thread_count() {
        let items: Vec<u64> = (0..100).collect();
        let one = super::map_in_order(1, &items, |x| x * x);
        let four = super::map_in_order(4, &items, |x| x * x);
        assert_eq!(one, four);
        assert_eq!(one[7], 49);
        assert_eq!(one.len(), 100);
    }

    /// Chunked: the same results in order on any thread count, the progress rising to 1.
    #[test]
    fn chunked_keeps_order_and_reports() {
        let items: Vec<u64> = (0..1000).collect();
        let mut seen = Vec::new();
        let two = super::map_in_order_chunked(2, &items, 128, |x| x * 3, &mut |f| seen.push(f));
        let one = super::map_in_order_chunked(1, &items, 7, |x| x * 3, &mut |_| {});
        assert_eq!(two, one);
        assert_eq!(two[999], 2997);
        assert_eq!(seen.len(), 8);
        assert_eq!(seen.last(), Some(&1.0));
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
    }

    /// Per-sample maps: the same results in order below and above the threshold.
    #[test]
    fn samples_keep_order() {
        for n in [10u64, 5000] {
            let items: Vec<u64> = (0..n).collect();
            let got = super::map_samples(&items, |x| x * x + 1);
            assert_eq!(got, items.iter().map(|x| x * x + 1).collect::<Vec<_>>());
        }
    }

    /// Nested calls (each item fanning out again) give the same results as one thread.
    #[test]
    fn nested_calls_keep_order() {
        let items: Vec<u64> = (0..20).collect();
        let inner = |x: &u64| -> Vec<u64> {
            let sub: Vec<u64> = (0..*x).collect();
            super::map_in_order(2, &sub, |y| x * 100 + y)
        };
        let one: Vec<Vec<u64>> = items.iter().map(inner).collect();
        let nested = super::map_in_order(2, &items, inner);
        assert_eq!(one, nested);
        assert_eq!(nested[3], vec![300, 301, 302]);
    }
}
