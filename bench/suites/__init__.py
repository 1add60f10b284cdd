"""One module per suite; each defines ``run(quick: bool) -> Iterator[Result | Target]``."""
