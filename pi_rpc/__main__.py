from pi_rpc.modes.cli import main

main()
