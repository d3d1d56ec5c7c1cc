from instructor.cli import main

raise SystemExit(main())
