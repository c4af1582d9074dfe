import ReachdProgram

ReachD.main()
