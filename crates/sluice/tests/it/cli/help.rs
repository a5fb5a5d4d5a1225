//! Every command's `--help` shows an example, found by walking the command
//! tree that `--help` itself lists (so a new command is covered too).

use super::run;

/// The command names in the "Commands:" section of a help text.
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn every_command_help_has_an_example_of_itself() {
    let (code, top, _) = run("http://127.0.0.1:9", &["--help"]).await;
    assert_eq!(code, 0);
    let mut pending: Vec<Vec<String>> = commands(&top).into_iter().map(|c| vec![c]).collect();
    assert!(pending.len() >= 8, "{top}");
    let mut checked = 0;
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let (code, help, stderr) = run("http://127.0.0.1:9", &args).await;
        assert_eq!(code, 0, "{args:?}: {stderr}");
        let invocation = format!("sluice {}", path.join(" "));
        assert!(
            help.contains("Example") && help.contains(&invocation),
            "`{invocation} --help` shows no example of itself:\n{help}"
        );
        for sub in commands(&help) {
            let mut deeper = path.clone();
            deeper.push(sub);
            pending.push(deeper);
        }
        checked += 1;
    }
    assert!(checked >= 14, "{checked} commands checked");
}
