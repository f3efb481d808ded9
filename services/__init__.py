"""verirl's services: grader, api, sampler, trainer."""
