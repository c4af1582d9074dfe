import ReachctlProgram

await reachctlMain()
