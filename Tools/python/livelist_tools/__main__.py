"""`python3 -m livelist_tools free-port`: a free TCP port on 127.0.0.1, for the shell scripts."""
import argparse

import livelist_tools


def main():
    parser = argparse.ArgumentParser(prog="python3 -m livelist_tools", description=livelist_tools.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["free-port"], help="free-port: print a free TCP port on 127.0.0.1")
    parser.parse_args()
    print(livelist_tools.free_port())


if __name__ == "__main__":
    main()
