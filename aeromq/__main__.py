from aeromq._cli import main

raise SystemExit(main())
