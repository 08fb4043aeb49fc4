/**
 * @file Tree-sitter grammar for the OP2 kernel description language (.op2)
 * @license MIT
 *
 * An .op2 file declares the sets, maps, dats, consts and globals of an OP2
 * program, its kernels (a C subset) and `main`, the order in which par_loops
 * run. The grammar also accepts a few C constructs that the language rejects
 * (switch, goto, struct, pointer declarators, address-of) so that the syntax
 * layer can name the unsupported construct instead of reporting a bare error.
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

// C precedence, lowest first.
const PREC = {
  ASSIGNMENT: 1,
  CONDITIONAL: 2,
  LOGICAL_OR: 3,
  LOGICAL_AND: 4,
  BITWISE_OR: 5,
  BITWISE_XOR: 6,
  BITWISE_AND: 7,
  EQUALITY: 8,
  RELATIONAL: 9,
  SHIFT: 10,
  ADDITIVE: 11,
  MULTIPLICATIVE: 12,
  CAST: 13,
  UNARY: 14,
  POSTFIX: 15,
};

const SCALAR_TYPES = ['double', 'float', 'int', 'uint', 'll', 'ull', 'bool'];

const ACCESS_MODES = ['READ', 'WRITE', 'RW', 'INC', 'MIN', 'MAX'];

// The reserved words of language.md §2.
const RESERVED = [
  'set', 'map', 'dat', 'const', 'global', 'kernel', 'main', 'par_loop',
  'over', 'as', 'on', 'import', 'len', 'print', 'printf', 'exit', 'fetch',
  'if', 'else', 'for', 'while', 'do', 'break', 'continue', 'return',
  'true', 'false',
  ...ACCESS_MODES,
  ...SCALAR_TYPES,
];

module.exports = grammar({
  name: 'op2',

  extras: $ => [/\s/, $.comment],

  supertypes: $ => [$._item, $._statement, $._expression],

  word: $ => $.identifier,

  // The reserved words of language.md §2. Reserved rather than contextual:
  // `double on = 1;` is an error as §2 says, and a kernel body left open
  // while typing ends at the next `set`, `kernel` or `main` (a MISSING `}`)
  // instead of swallowing every declaration after it.
  reserved: {
    global: _ => RESERVED,
    // Inside a par_loop argument `idx` and `INFO` are reserved too; they
    // are ordinary names everywhere else (a kernel parameter called `idx`
    // is what OP2 codes write).
    argument: _ => [...RESERVED, 'idx', 'INFO'],
  },

  rules: {
    source_file: $ => repeat($._item),

    // ------------------------------------------------------------------
    // Top-level items
    // ------------------------------------------------------------------

    _item: $ => choice(
      $.import_declaration,
      $.set_declaration,
      $.map_declaration,
      $.dat_declaration,
      $.const_declaration,
      $.global_declaration,
      $.kernel_definition,
      $.main_definition,
      // Accepted here so that the analyser can say "par_loop outside main"
      // (E601) rather than the parser reporting a syntax error.
      $.par_loop_statement,
    ),

    import_declaration: $ => seq('import', field('path', $.string_literal), ';'),

    set_declaration: $ => seq('set', field('name', $.identifier), ';'),

    map_declaration: $ => seq(
      'map',
      field('name', $.identifier),
      ':',
      field('from', $.identifier),
      '->',
      field('to', $.identifier),
      '[',
      field('arity', $.integer_literal),
      ']',
      ';',
    ),

    dat_declaration: $ => seq(
      'dat',
      field('name', $.identifier),
      ':',
      field('type', $.element_type),
      'on',
      field('set', $.identifier),
      optional(seq('=', field('value', $._initializer))),
      ';',
    ),

    const_declaration: $ => seq(
      'const',
      field('name', $.identifier),
      ':',
      field('type', $.element_type),
      optional(seq('=', field('value', $._initializer))),
      ';',
    ),

    global_declaration: $ => seq(
      'global',
      field('name', $.identifier),
      ':',
      field('type', $.element_type),
      optional(seq('=', field('value', $._initializer))),
      ';',
    ),

    // `double` or `double[4]`.
    element_type: $ => seq(
      field('scalar', $.primitive_type),
      optional(seq('[', field('dimension', $.integer_literal), ']')),
    ),

    primitive_type: _ => choice(...SCALAR_TYPES),

    _initializer: $ => choice($._expression, $.initializer_list),

    initializer_list: $ => seq(
      '{',
      commaSepTrailing(field('element', $._expression)),
      '}',
    ),

    kernel_definition: $ => seq(
      'kernel',
      field('name', $.identifier),
      field('parameters', $.parameter_list),
      field('body', $.compound_statement),
    ),

    parameter_list: $ => seq(
      '(',
      commaSepTrailing(field('parameter', $.parameter)),
      ')',
    ),

    // `const double *q` (dimension from the bound argument) or
    // `double q[4]` (dimension stated and checked).
    parameter: $ => seq(
      optional(field('const', $.const_qualifier)),
      field('type', $.primitive_type),
      choice(
        seq('*', field('name', $.identifier)),
        seq(field('name', $.identifier), '[', field('dimension', $.integer_literal), ']'),
      ),
    ),

    const_qualifier: _ => 'const',

    main_definition: $ => seq('main', field('body', $.compound_statement)),

    // ------------------------------------------------------------------
    // Statements
    // ------------------------------------------------------------------

    _statement: $ => choice(
      $.compound_statement,
      $.local_declaration,
      $.expression_statement,
      $.if_statement,
      $.for_statement,
      $.while_statement,
      $.do_statement,
      $.break_statement,
      $.continue_statement,
      $.return_statement,
      $.par_loop_statement,
      $.print_statement,
      $.exit_statement,
      $.fetch_statement,
      // Unsupported C, reported by the syntax layer with a precise message.
      $.switch_statement,
      $.case_label,
      $.goto_statement,
    ),

    compound_statement: $ => seq('{', repeat(field('statement', $._statement)), '}'),

    // `double dx, dy = 0.0;` and `double t[4] = {0, 0, 0, 0};`
    local_declaration: $ => seq(
      optional(field('const', $.const_qualifier)),
      field('type', choice($.primitive_type, $.struct_specifier)),
      commaSep1(field('declarator', $.variable_declarator)),
      ';',
    ),

    variable_declarator: $ => seq(
      // A pointer declarator is not part of the language; it parses so that
      // the syntax layer can say so.
      optional(field('pointer', $.pointer_marker)),
      field('name', $.identifier),
      optional(seq('[', field('dimension', $.integer_literal), ']')),
      optional(seq('=', field('value', $._initializer))),
    ),

    pointer_marker: _ => '*',

    expression_statement: $ => seq(optional(field('expression', $._expression)), ';'),

    if_statement: $ => prec.right(seq(
      'if',
      field('condition', $.parenthesized_expression),
      field('consequence', $._statement),
      optional(seq('else', field('alternative', $._statement))),
    )),

    for_statement: $ => seq(
      'for',
      '(',
      choice(
        field('initializer', $.local_declaration),
        seq(optional(field('initializer', $._expression)), ';'),
      ),
      optional(field('condition', $._expression)),
      ';',
      optional(field('update', $._expression)),
      ')',
      field('body', $._statement),
    ),

    while_statement: $ => seq(
      'while',
      field('condition', $.parenthesized_expression),
      field('body', $._statement),
    ),

    do_statement: $ => seq(
      'do',
      field('body', $._statement),
      'while',
      field('condition', $.parenthesized_expression),
      ';',
    ),

    break_statement: _ => seq('break', ';'),

    continue_statement: _ => seq('continue', ';'),

    // Kernels and main return nothing; a value is parsed so that the syntax
    // layer can report it precisely.
    return_statement: $ => seq('return', optional(field('value', $._expression)), ';'),

    par_loop_statement: $ => seq(
      'par_loop',
      field('kernel', $.identifier),
      optional(seq('as', field('alias', $.identifier))),
      'over',
      field('set', $.identifier),
      field('arguments', $.par_loop_arguments),
      ';',
    ),

    par_loop_arguments: $ => seq(
      '(',
      commaSepTrailing(field('argument', $.par_loop_argument)),
      ')',
    ),

    // `p_q READ`, `p_x[pcell[0]] READ`, `rms INC`, `gam`, `len(cells)`,
    // `idx`, `idx[pedge[1]]`, `errloc INFO(maxerr)`.
    par_loop_argument: $ => reserved('argument', seq(
      field('data', choice($.identifier, $.len_expression, $.index_argument)),
      optional(seq(
        '[',
        field('map', $.identifier),
        '[',
        field('index', $.integer_literal),
        ']',
        ']',
      )),
      optional(choice(field('mode', $.access_mode), field('info', $.info_mode))),
    )),

    access_mode: _ => choice(...ACCESS_MODES),

    // The index of the iteration element, or with a map the index of the
    // element it reaches (OP2's `op_arg_idx`). A contextual keyword: `idx`
    // is an ordinary name everywhere but at the start of an argument.
    index_argument: _ => 'idx',

    // `INFO(G)`: the global records what the kernel stored in it at the
    // element where the MIN or MAX global `G` of the same loop reached its
    // extreme (OP2's `op_arg_info`). `INFO` is contextual like `idx`.
    info_mode: $ => seq('INFO', '(', field('global', $.identifier), ')'),

    // `print(…)` ends the line it writes; `printf(…)` writes exactly what
    // C's printf writes (language.md §8).
    print_statement: $ => seq(
      choice('print', 'printf'),
      '(',
      field('format', $.string_literal),
      repeat(seq(',', field('argument', $._expression))),
      ')',
      ';',
    ),

    // `exit(STATUS);` ends the program with that exit status.
    exit_statement: $ => seq(
      'exit',
      '(',
      field('status', $._expression),
      ')',
      ';',
    ),

    // `fetch DAT into GLOBAL;` copies every value of a dat into a global
    // array of size × dim values (OP2's `op_fetch_data`; language.md §8).
    // `into` is contextual: an ordinary name everywhere else.
    fetch_statement: $ => seq(
      'fetch',
      field('dat', $.identifier),
      'into',
      field('global', $.identifier),
      ';',
    ),

    switch_statement: $ => seq(
      'switch',
      field('condition', $.parenthesized_expression),
      field('body', $.compound_statement),
    ),

    case_label: $ => seq(
      choice(seq('case', field('value', $._expression)), 'default'),
      ':',
    ),

    goto_statement: $ => seq('goto', field('label', $.identifier), ';'),

    struct_specifier: $ => seq(
      'struct',
      choice(
        seq(field('name', $.identifier), optional($._struct_body)),
        $._struct_body,
      ),
    ),

    _struct_body: $ => seq('{', repeat($.local_declaration), '}'),

    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    _expression: $ => choice(
      $.identifier,
      $.integer_literal,
      $.float_literal,
      $.boolean_literal,
      $.parenthesized_expression,
      $.assignment_expression,
      $.update_expression,
      $.conditional_expression,
      $.binary_expression,
      $.unary_expression,
      $.cast_expression,
      $.subscript_expression,
      $.call_expression,
      $.len_expression,
    ),

    parenthesized_expression: $ => seq('(', field('expression', $._expression), ')'),

    assignment_expression: $ => prec.right(PREC.ASSIGNMENT, seq(
      field('left', $._expression),
      field('operator', choice('=', '+=', '-=', '*=', '/=', '%=', '&=', '|=', '^=', '<<=', '>>=')),
      field('right', $._expression),
    )),

    conditional_expression: $ => prec.right(PREC.CONDITIONAL, seq(
      field('condition', $._expression),
      '?',
      field('consequence', $._expression),
      ':',
      field('alternative', $._expression),
    )),

    binary_expression: $ => {
      const table = [
        ['||', PREC.LOGICAL_OR],
        ['&&', PREC.LOGICAL_AND],
        ['|', PREC.BITWISE_OR],
        ['^', PREC.BITWISE_XOR],
        ['&', PREC.BITWISE_AND],
        ['==', PREC.EQUALITY],
        ['!=', PREC.EQUALITY],
        ['<', PREC.RELATIONAL],
        ['<=', PREC.RELATIONAL],
        ['>', PREC.RELATIONAL],
        ['>=', PREC.RELATIONAL],
        ['<<', PREC.SHIFT],
        ['>>', PREC.SHIFT],
        ['+', PREC.ADDITIVE],
        ['-', PREC.ADDITIVE],
        ['*', PREC.MULTIPLICATIVE],
        ['/', PREC.MULTIPLICATIVE],
        ['%', PREC.MULTIPLICATIVE],
      ];
      return choice(...table.map(([operator, precedence]) =>
        prec.left(precedence, seq(
          field('left', $._expression),
          // @ts-ignore
          field('operator', operator),
          field('right', $._expression),
        )),
      ));
    },

    // `*p` reads `p[0]`; `&x` is not part of the language but parses so the
    // syntax layer can name it.
    unary_expression: $ => prec.left(PREC.UNARY, seq(
      field('operator', choice('-', '+', '!', '~', '*', '&')),
      field('argument', $._expression),
    )),

    // Prefix `++x` binds like the other unary operators, postfix `x++` like
    // indexing, so that `-x++` is `-(x++)` and `*p++` is `*(p++)`, as in C.
    update_expression: $ => {
      const argument = field('argument', $._expression);
      const operator = field('operator', choice('++', '--'));
      return choice(
        prec.right(PREC.UNARY, seq(operator, argument)),
        prec.left(PREC.POSTFIX, seq(argument, operator)),
      );
    },

    cast_expression: $ => prec(PREC.CAST, seq(
      '(',
      field('type', $.primitive_type),
      ')',
      field('value', $._expression),
    )),

    subscript_expression: $ => prec(PREC.POSTFIX, seq(
      field('argument', $._expression),
      '[',
      field('index', $._expression),
      ']',
    )),

    call_expression: $ => prec(PREC.POSTFIX, seq(
      field('function', $.identifier),
      field('arguments', $.argument_list),
    )),

    argument_list: $ => seq('(', commaSep(field('argument', $._expression)), ')'),

    // The number of elements of a set, as an int.
    len_expression: $ => seq('len', '(', field('set', $.identifier), ')'),

    // ------------------------------------------------------------------
    // Tokens
    // ------------------------------------------------------------------

    identifier: _ => /[A-Za-z_][A-Za-z0-9_]*/,

    integer_literal: _ => token(choice(
      /0[xX][0-9a-fA-F]+[uU]?/,
      /[0-9]+[uU]?/,
    )),

    float_literal: _ => token(choice(
      /[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?[fF]?/,
      /\.[0-9]+([eE][+-]?[0-9]+)?[fF]?/,
      /[0-9]+[eE][+-]?[0-9]+[fF]?/,
    )),

    boolean_literal: _ => choice('true', 'false'),

    string_literal: $ => seq(
      '"',
      repeat(choice(
        alias(token.immediate(prec(1, /[^"\\\n]+/)), $.string_content),
        $.escape_sequence,
      )),
      token.immediate('"'),
    ),

    escape_sequence: _ => token.immediate(seq(
      '\\',
      choice(
        /[^xuU0-7]/,
        /[0-7]{1,3}/,
        /x[0-9a-fA-F]{1,2}/,
      ),
    )),

    comment: _ => token(choice(
      seq('//', /[^\r\n]*/),
      seq('/*', /[^*]*\*+([^/*][^*]*\*+)*/, '/'),
    )),
  },
});

/**
 * One or more `rule` separated by commas.
 * @param {RuleOrLiteral} rule
 */
function commaSep1(rule) {
  return seq(rule, repeat(seq(',', rule)));
}

/**
 * Zero or more `rule` separated by commas, with an optional trailing comma
 * after at least one.
 * @param {RuleOrLiteral} rule
 */
function commaSepTrailing(rule) {
  return optional(seq(commaSep1(rule), optional(',')));
}

/**
 * Zero or more `rule` separated by commas.
 * @param {RuleOrLiteral} rule
 */
function commaSep(rule) {
  return optional(commaSep1(rule));
}
