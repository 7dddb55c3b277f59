# bash completion for cisc(1) - installed as
# share/bash-completion/completions/cisc (loaded on first use of `cisc`).
#
# Nothing here lists commands or options: they come from the cisc being
# completed (`cisc --help`, `cisc CMD --help`), the one table they are
# written in, so the completion cannot drift from the command line.

_cisc_commands()
{
    "$1" --help 2>/dev/null | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'
}

_cisc_options()
{
    "$1" "$2" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

# Mount points of running devices (for the commands that take one).
_cisc_mounts()
{
    awk '$0 ~ / - fuse\.ciscfs / { print $5 }' /proc/self/mountinfo 2>/dev/null
}

_cisc()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$(_cisc_commands "${COMP_WORDS[0]}") help --help --version" -- "$cur"))
        return
    fi
    case $prev in
        --log|--input|--output|--out|--size|--name|--arg|--prog|--block-size|--chunk)
            [[ $prev == --log || $prev == --input || $prev == --out ]] && COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_cisc_options "${COMP_WORDS[0]}" "$cmd")" -- "$cur"))
        return
    fi
    case $cmd in
        prog)
            if [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "load list show unload" -- "$cur"))
            elif [[ $COMP_CWORD -eq 3 ]]; then
                COMPREPLY=($(compgen -W "$(_cisc_mounts)" -- "$cur") $(compgen -d -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi ;;
        bpf)
            if [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "verify run disasm" -- "$cur"))
            else
                COMPREPLY=($(compgen -f -X '!*.o' -- "$cur") $(compgen -d -- "$cur"))
            fi ;;
        down|status|top|recovery|run|tenant)
            COMPREPLY=($(compgen -W "$(_cisc_mounts)" -- "$cur") $(compgen -d -- "$cur")) ;;
        help)
            COMPREPLY=($(compgen -W "$(_cisc_commands "${COMP_WORDS[0]}")" -- "$cur")) ;;
        *)
            COMPREPLY=($(compgen -f -- "$cur")) ;;
    esac
}
complete -F _cisc cisc
