cat > calc.py <<'PY'
import sys


def main():
    a, b = sys.argv[1], sys.argv[2]
    print(a + b)


if __name__ == "__main__":
    main()
PY
