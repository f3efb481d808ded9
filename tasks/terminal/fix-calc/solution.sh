sed -i 's/    a, b = sys.argv\[1\], sys.argv\[2\]/    a, b = int(sys.argv[1]), int(sys.argv[2])/' calc.py
