from bench._harness import main

raise SystemExit(main())
