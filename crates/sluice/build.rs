//! Records the source commit in the binary, for `sluice --version` and for
//! the benchmark suite, which reports the commit of the binary it measures.
//! Outside a git checkout (a source tarball) the commit is `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=7", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SLUICE_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names (a loose ref or
    // packed-refs); a worktree keeps its HEAD apart from the shared refs.
    for (flag, files) in [
        ("--git-dir", &["HEAD"][..]),
        ("--git-common-dir", &["refs/heads", "packed-refs"][..]),
    ] {
        if let Some(dir) = git(&["rev-parse", flag]) {
            for file in files {
                println!("cargo:rerun-if-changed={dir}/{file}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
