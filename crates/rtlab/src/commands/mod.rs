//! One module per command.

mod campaign;
mod compare_baseline;
pub mod completions;
mod exec;
mod exec_admit;
mod exec_guards;
mod exec_serve;
mod exec_taskset;
mod exec_worker;
mod focus;
pub mod load;
pub mod man;
mod measure;
mod measure_noise;
mod measure_switch;
mod measure_timer;
mod monitor;
mod net;
pub mod plan;
pub mod plan_run;
mod report;
mod restore;
mod store;
mod stored;
mod traffic_plan;
mod traffic_record;
mod traffic_replay;
pub mod tune;
mod tune_check;
mod tune_systemd;

use crate::cli::{
    CampaignCommand, Cli, Command, ExecCommand, Measure, Net, PlanCommand, RunsAction,
    StoreCommand, TrafficCommand,
};
use std::process::ExitCode;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Measure(Measure::Timer(args)) => measure_timer::run(*args),
        Command::Measure(Measure::Switch(args)) => measure_switch::run(*args),
        Command::Measure(Measure::Noise(args)) => measure_noise::run(*args),
        Command::Restore(args) => restore::run(&args),
        Command::Quick(args) => campaign::quick(args),
        Command::Campaign(CampaignCommand::Plan(args)) => campaign::plan(args),
        Command::Campaign(CampaignCommand::Run(args)) => campaign::run(args),
        Command::Runs(mut args) => match args.action.take() {
            None => stored::runs(args),
            Some(RunsAction::Delete(args)) => store::delete(args),
            Some(RunsAction::Tag(args)) => store::tag(args),
        },
        Command::Store(StoreCommand::Check(args)) => store::check(args),
        Command::Store(StoreCommand::Push(args)) => store::push(args),
        Command::Show(args) => stored::show(args),
        Command::Compare(args) => stored::compare_runs(args),
        Command::Report(args) => report::run(*args),
        Command::Export(args) => stored::export(args),
        Command::Import(args) => stored::import(args),
        Command::Net(Net::Serve(args)) => net::serve(*args),
        Command::Net(Net::Probe(args)) => net::probe(*args),
        Command::Load(args) => load::run(*args),
        Command::LoadWorker(args) => load::worker(args),
        Command::Plan(PlanCommand::Compile(args)) => plan::compile(args),
        Command::Plan(PlanCommand::Check(args)) => plan::check(args),
        Command::Plan(PlanCommand::Show(args)) => plan::show(args),
        Command::Plan(PlanCommand::Gen(args)) => plan::gen(args),
        Command::Plan(PlanCommand::Run(args)) => plan_run::run(*args),
        Command::Exec(ExecCommand::Periodic(args)) => exec::periodic(*args),
        Command::Exec(ExecCommand::KurtTable(args)) => exec::kurt_table(*args),
        Command::Exec(ExecCommand::ProcessWorker { plan }) => Ok(exec_worker::run(&plan)),
        Command::Exec(ExecCommand::ImportRtApp(args)) => exec_taskset::import_rt_app(args),
        Command::Exec(ExecCommand::CheckTaskset(args)) => exec_taskset::check_taskset(args),
        Command::Exec(ExecCommand::Admit(args)) => exec_admit::admit(*args),
        Command::Exec(ExecCommand::Serve(args)) => exec_serve::serve(*args),
        Command::Exec(ExecCommand::Status(args)) => exec_serve::status(&args),
        Command::Focus(args) => focus::run(&args),
        Command::Monitor(args) => monitor::run(*args),
        Command::Traffic(TrafficCommand::Record(args)) => traffic_record::run(*args),
        Command::Traffic(TrafficCommand::Import(args)) => traffic_plan::import(args),
        Command::Traffic(TrafficCommand::Gen(args)) => traffic_plan::gen(args),
        Command::Traffic(TrafficCommand::Export(args)) => traffic_plan::export(args),
        Command::Traffic(TrafficCommand::Replay(args)) => traffic_replay::run(*args),
        Command::Tune(command) => tune::run(command),
        Command::Completions(args) => completions::run(&args),
        Command::Man(args) => man::run(&args),
    }
}
