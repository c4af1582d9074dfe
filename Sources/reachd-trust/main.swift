import ReachdTrustProgram

await ReachdTrust.main()
