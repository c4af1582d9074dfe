import ReachdProgram

Reachd.main()
