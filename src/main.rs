//! The `tensorgate` binary: parses the command line and runs the chosen
//! command. Everything else lives in the library.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use tensorgate::cli::{Cli, Command, LogFormat, ServeArgs, banner, debug};
use tensorgate::config::{Config, DEFAULT_ADMIN_LISTEN, DEFAULT_LISTEN};
use tensorgate::observe::access;
use tensorgate::reload::{self, Loader, Overrides, Source};

/// mimalloc: per-thread free lists, no arena lock on the request path
/// (measured with scripts/bench-proxy.sh; see docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

/// The process's allocator: mimalloc, asked for a plain block wherever a
/// plain block is aligned enough. The `mimalloc` crate asks for an
/// aligned block on every allocation, and mimalloc 3 serves an aligned
/// request of more than 1 KiB (a request's future, a reply's buffer)
/// whose size is not a power of two by over-allocating and aligning
/// inside the block, on its slow path, for several allocations of every
/// request (see docs/PERFORMANCE.md, "What each decision bought").
#[allow(unsafe_code)]
mod allocator {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;

    use libmimalloc_sys::{
        mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
        mi_zalloc_aligned,
    };

    /// The alignment of every mimalloc block of at least this size
    /// (`MI_MAX_ALIGN_SIZE`: its size classes above one word are
    /// multiples of 16 bytes, and a page's first block is 16-aligned); a
    /// smaller block (one word) is aligned to its size.
    const PLAIN_ALIGN: usize = 16;

    /// Whether a plain block of `size` bytes is aligned for `align`.
    pub(super) fn plain(size: usize, align: usize) -> bool {
        align <= PLAIN_ALIGN && align <= size
    }

    /// mimalloc, plain where that is aligned enough.
    #[derive(Debug)]
    pub struct Allocator;

    // SAFETY: every block comes from mimalloc and goes back to it
    // (`mi_free` takes plain and aligned blocks alike); a plain block is
    // asked for only where `plain` says mimalloc's own alignment meets the
    // layout's, else the aligned call is made, as the `mimalloc` crate
    // does for every layout.
    unsafe impl GlobalAlloc for Allocator {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: mimalloc's allocation functions take any size and a
            // power-of-two alignment (a `Layout`'s always is).
            unsafe {
                if plain(layout.size(), layout.align()) {
                    mi_malloc(layout.size()).cast()
                } else {
                    mi_malloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as `alloc`.
            unsafe {
                if plain(layout.size(), layout.align()) {
                    mi_zalloc(layout.size()).cast()
                } else {
                    mi_zalloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from this allocator, so from mimalloc.
            unsafe { mi_free(ptr.cast::<c_void>()) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: `ptr` came from this allocator with `layout`; the
            // block it becomes is plain only where that is aligned enough
            // for the layout's alignment at its new size.
            unsafe {
                if plain(new_size, layout.align()) {
                    mi_realloc(ptr.cast::<c_void>(), new_size).cast()
                } else {
                    mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn blocks_are_aligned_as_their_layouts_ask() {
            let a = Allocator;
            let sizes = [
                1, 7, 8, 9, 12, 16, 17, 24, 40, 48, 100, 1000, 1025, 1500, 4000, 8200, 70_000,
            ];
            for size in sizes {
                for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
                    let layout = Layout::from_size_align(size, align).unwrap();
                    // SAFETY: a layout of non-zero size; each block is
                    // written within its size and freed once, with its
                    // layout.
                    unsafe {
                        let p = a.alloc(layout);
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "size {size} align {align}");
                        p.write_bytes(0xa5, size);
                        let grown = a.realloc(p, layout, size * 3);
                        assert_eq!(grown as usize % align, 0, "realloc {size} align {align}");
                        assert_eq!(*grown.add(size - 1), 0xa5);
                        a.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                        let z = a.alloc_zeroed(layout);
                        assert_eq!(z as usize % align, 0, "zeroed {size} align {align}");
                        assert!((0..size).all(|i| *z.add(i) == 0));
                        a.dealloc(z, layout);
                    }
                }
            }
        }

        #[test]
        fn plain_only_within_mimallocs_own_alignment() {
            assert!(plain(2048, 8));
            assert!(plain(16, 16));
            assert!(plain(8, 8));
            assert!(!plain(8, 16));
            assert!(!plain(2048, 32));
            assert!(!plain(256, 128));
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => serve(cli.serve),
        Some(Command::Serve(args)) => serve(args),
        Some(Command::CheckConfig { file }) => check_config(&file),
        Some(Command::DemoBackend {
            listen,
            grpc_listen,
        }) => demo_backend(listen, grpc_listen),
        Some(Command::Tensor(c)) => report(debug::run_tensor(c)),
        Some(Command::Request(c)) => report(debug::run_request(c)),
    }
}

fn report(result: Result<(), debug::CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let access = match format {
        LogFormat::Json => {
            builder.json().flatten_event(true).init();
            access::Format::Json
        }
        LogFormat::Pretty => {
            builder.compact().with_ansi(ansi).init();
            access::Format::Text
        }
    };
    // Access-log lines bypass `tracing` (their formatting was the largest
    // cost of a proxied request) and go through their own writer thread.
    access::install(access, Box::new(std::io::stderr()));
}

fn check_config(file: &std::path::Path) -> ExitCode {
    match reload::load_file(file) {
        Ok((c, hash)) => {
            println!(
                "{}: ok ({} backends, {} routes, hash {hash})",
                file.display(),
                c.backends.len(),
                c.routes.len()
            );
            ExitCode::SUCCESS
        }
        Err(errors) => {
            eprintln!("{}: {} problem(s)", file.display(), errors.0.len());
            for e in &errors.0 {
                eprintln!("  {e}");
            }
            ExitCode::from(2)
        }
    }
}

fn demo_backend(listen: SocketAddr, grpc_listen: Option<SocketAddr>) -> ExitCode {
    init_logging(LogFormat::Pretty);
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .and_then(|rt| {
            rt.block_on(async {
                let listener = tokio::net::TcpListener::bind(listen).await?;
                eprintln!(
                    "tensorgate demo backend on http://{}",
                    listener.local_addr()?
                );
                let Some(grpc_addr) = grpc_listen else {
                    return tensorgate_demo::serve(listener, wait_for_signal()).await;
                };
                let grpc_listener = tokio::net::TcpListener::bind(grpc_addr).await?;
                eprintln!(
                    "tensorgate demo backend gRPC on {}",
                    grpc_listener.local_addr()?
                );
                // One signal stops both servers.
                let (stop, stopped) = tokio::sync::watch::channel(false);
                let until_stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
                    let _ = rx.wait_for(|s| *s).await;
                };
                let http = tensorgate_demo::serve(listener, until_stopped(stopped.clone()));
                let grpc = tensorgate_demo::serve_grpc(grpc_listener, until_stopped(stopped));
                let signal = async move {
                    wait_for_signal().await;
                    let _ = stop.send(true);
                };
                let (http, grpc, ()) = tokio::join!(http, grpc, signal);
                http.and(grpc)
            })
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tensorgate demo-backend: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    init_logging(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    // Dropping a runtime waits for its blocking tasks without end: one
    // stuck in a system call (a reload reading a file on a hung mount)
    // must not hold the process past its shutdown.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tensorgate: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: ServeArgs) -> Result<(), String> {
    // Before anything listens: a SIGHUP's default action ends the process.
    let hangups = hangups();
    let mut demo = None;
    let source = match (&args.config, args.backend.as_slice()) {
        (Some(path), _) => Source::File(path.clone()),
        (None, urls @ [_, ..]) => Source::Fixed(Box::new(
            Config::single_backend(
                urls,
                args.listen.unwrap_or(DEFAULT_LISTEN),
                args.admin_listen.unwrap_or(DEFAULT_ADMIN_LISTEN),
            )
            .map_err(|e| format!("--backend {}: {e}", urls.join(" --backend ")))?,
        )),
        (None, []) => {
            let server = tensorgate_demo::spawn()
                .await
                .map_err(|e| format!("cannot start the demo backend: {e}"))?;
            let c = Config::demo(
                server.addr,
                args.listen.unwrap_or(DEFAULT_LISTEN),
                args.admin_listen.unwrap_or(DEFAULT_ADMIN_LISTEN),
            )
            .map_err(|e| format!("demo configuration: {e}"))?;
            demo = Some(server);
            Source::Fixed(Box::new(c))
        }
    };
    let loader = Loader {
        source,
        overrides: Overrides {
            listen: args.listen,
            admin_listen: args.admin_listen,
            tls: args.tls_cert.clone().zip(args.tls_key.clone()),
            otel_endpoint: args.otel_endpoint.clone(),
            otel_sample_ratio: args.otel_sample_ratio,
        },
    };
    let loaded = loader.load().map_err(|e| match &args.config {
        Some(path) => format!("{}:\n{e}", path.display()),
        None => e.to_string(),
    })?;
    // The hash is in the metrics before the admin port answers.
    let metrics = tensorgate::metrics::Metrics::new().map_err(|e| format!("metrics: {e}"))?;
    metrics.config_hash.set(loaded.hash as f64);
    let bind = |addr| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))
    };
    let data = bind(loaded.config.server.listen).await?;
    let admin = bind(loaded.config.server.admin_listen).await?;
    // What is in force, said before the configuration moves into the server.
    let summary = banner::summary(
        &loaded.config,
        data.local_addr().map_err(|e| format!("data port: {e}"))?,
        admin.local_addr().map_err(|e| format!("admin port: {e}"))?,
        loaded.config.server.tls.is_some(),
    );
    let running = tensorgate::server::start_with_metrics(loaded.config, data, admin, metrics)
        .map_err(|e| format!("cannot start: {e}"))?;
    if demo.is_some() {
        let cert = args.tls_cert.as_deref().filter(|_| running.tls.is_some());
        print!(
            "{}",
            banner::demo_banner(running.data_addr, running.admin_addr, cert)
        );
    } else {
        for line in summary {
            tracing::info!("{line}");
        }
    }
    let reloader = reload::Reloader::new(loader, &running, loaded.hash);
    let reloads = reload::spawn(reloader, loaded.files, reload::POLL_INTERVAL);
    let stop = running.stopper();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown signal received");
        let _ = stop.send(true);
    });
    let hangups = tokio::spawn(forward_hangups(hangups, reloads));
    let live = running.live.clone();
    running.wait().await;
    hangups.abort();
    // The spans still queued go to the collector before the process ends
    // (the export runs on this runtime: wait for it off its threads).
    if let Some(pipeline) = live.current().pipeline().cloned() {
        let flushed = tokio::task::spawn_blocking(move || {
            pipeline.shutdown(std::time::Duration::from_secs(5));
        });
        let _ = flushed.await;
    }
    access::flush(std::time::Duration::from_secs(2));
    if let Some(demo) = demo {
        let _ = demo.shutdown().await;
    }
    Ok(())
}

/// SIGHUP, caught from now on (`None` where there is no such signal or it
/// cannot be caught).
#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = Option<()>;

fn hangups() -> Hangups {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let hup = signal(SignalKind::hangup());
        if let Err(e) = &hup {
            tracing::warn!(error = %e, "cannot catch SIGHUP; reloads happen on file changes only");
        }
        hup.ok()
    }
    #[cfg(not(unix))]
    None
}

/// Reloads the configuration on every SIGHUP (`kill -HUP <pid>`), for as
/// long as `reloads` runs.
async fn forward_hangups(hangups: Hangups, reloads: reload::Handle) {
    #[cfg(unix)]
    if let Some(mut hup) = hangups {
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP received: reloading the configuration");
            reloads.request();
        }
    }
    #[cfg(not(unix))]
    let _ = (hangups, &reloads);
    std::future::pending::<()>().await
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
