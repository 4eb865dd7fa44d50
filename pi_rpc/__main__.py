from pi_rpc.cli import main

main()
