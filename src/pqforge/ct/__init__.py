"""Constant-time evidence: timing campaigns (dudect-style, with null runs and power) and a
deterministic trace check of the kernels that see secrets. See docs/constant-time.md in the
repository.

    from pqforge.ct import registry, harness, trace
    target = registry.get("mayo-sign-key")
    campaign = harness.run_campaign(target, "MAYO-2", measurements=5000, repeats=3)
    print(campaign.verdict, campaign.power["shift"]["resampled"])
"""
