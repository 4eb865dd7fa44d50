// What Pi's RpcClient runs as its `cliPath` (`node <cliPath> --mode rpc ...`): pi-rpc itself, on
// the same pipes. PI_RPC_PYTHON names the interpreter that has pi_rpc installed.
import { spawn } from "node:child_process";

const python = process.env.PI_RPC_PYTHON ?? "python3";
const daemon = spawn(python, ["-m", "pi_rpc", ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT"]) {
	process.on(signal, () => daemon.kill(signal));
}
daemon.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
