"""Excerpts of Project Gutenberg eBook #100 (pg100.txt) in its real layouts, for the Shakespeare tests.

:data:`PG100_EXCERPT` follows the current edition (the HTML-derived text served since the 2021-22
re-release, "Most recently updated" 2022-2024), line for line in its layout:

* the eBook header, ``*** START OF THE PROJECT GUTENBERG EBOOK ... ***``, the title block and the
  top-level ``Contents`` (titles indented four spaces), the licence footer after ``*** END OF``;
* THE SONNETS first (numbers centred by indentation, couplets indented two spaces), then the plays
  in alphabetical order, then the poems (A Lover's Complaint, The Passionate Pilgrim with its
  numbered poems ``I.``/``II.``, The Phoenix and the Turtle with ``THRENOS.``, The Rape of Lucrece
  with ``THE ARGUMENT.``, Venus and Adonis), none of which may become a client;
* each play: title in capitals, its own ``Contents`` (``ACT I`` / ``Scene I. Place.``),
  ``Dramatis Personæ`` (names in capitals, some entries entirely in capitals), a ``SCENE:`` line,
  then ``ACT I`` / ``SCENE I. Place.`` headings (``ACT I.`` with a period in some plays, ``THE
  PROLOGUE`` before Act I of Romeo and Juliet);
* speaker names in capitals alone on their line with a period (``FIRST CITIZEN.``, ``SIR TOBY.``),
  the speech below, unindented, verse half-lines that complete a shared line indented with many
  spaces, songs indented two spaces;
* stage directions indented one space (`` Enter Francisco and Barnardo, two sentinels.``, wrapped
  onto a second indented line), also inside a speech (`` Juliet appears above at a window.``),
  bracketed italics on their own line (`` [_Exit._]``) or inside a speech line (``[_Aside._]``);
  typographic apostrophes and dashes (’ —).

The text is Shakespeare's (public domain); only a few speeches per play are kept. Byte-exactness
with a given release is not claimed (the releases differ in details such as "ACT I" vs "ACT I."),
the layout rules above are what matters.

:data:`PG100_EXPECTED` is what a LEAF-style parse must return: (play title, {ROLE: speech lines}),
in text order, stage directions removed, ASCII apostrophes/dashes.

:data:`LEAF_ERA_EXCERPT` is the older edition LEAF (Caldas et al. 2018) was written for (the 1994
World Library text, "*** START OF THIS PROJECT GUTENBERG EBOOK COMPLETE WORKS--WILLIAM SHAKESPEARE
***"): a year line and ``by William Shakespeare`` around each title, ``<<THIS ELECTRONIC VERSION
...>>`` notices, ``  Name. speech`` indented two spaces with continuations indented four, mixed-
case abbreviated names (``  Ber.``), and THE COMEDY OF ERRORS without any indentation (LEAF's
``COE_CHARACTER_RE`` special case). :data:`LEAF_ERA_EXPECTED` is LEAF's parse of it.

The excerpts' lines of only spaces are written with ``\\x20`` escapes: the same text, but no
whitespace-only lines in the source for editors and linters to strip.
"""

PG100_EXCERPT = """\ufeffThe Project Gutenberg eBook of The Complete Works of William Shakespeare
\x20\x20\x20\x20
This ebook is for the use of anyone anywhere in the United States and
most other parts of the world at no cost and with almost no restrictions
whatsoever. You may copy it, give it away or re-use it under the terms
of the Project Gutenberg License included with this ebook or online
at www.gutenberg.org. If you are not located in the United States,
you will have to check the laws of the country where you are located
before using this eBook.

Title: The Complete Works of William Shakespeare

Author: William Shakespeare

Release date: January 1, 1994 [eBook #100]
                Most recently updated: October 29, 2024

Language: English



*** START OF THE PROJECT GUTENBERG EBOOK THE COMPLETE WORKS OF WILLIAM SHAKESPEARE ***
The Complete Works of William Shakespeare

by William Shakespeare




                    Contents

    THE SONNETS
    ALL’S WELL THAT ENDS WELL
    THE TRAGEDY OF CORIOLANUS
    THE TRAGEDY OF HAMLET, PRINCE OF DENMARK
    THE TRAGEDY OF ROMEO AND JULIET
    TWELFTH NIGHT; OR, WHAT YOU WILL
    A LOVER’S COMPLAINT
    THE PASSIONATE PILGRIM
    THE PHOENIX AND THE TURTLE
    THE RAPE OF LUCRECE
    VENUS AND ADONIS




THE SONNETS

                    1

From fairest creatures we desire increase,
That thereby beauty’s rose might never die,
But as the riper should by time decease,
His tender heir might bear his memory:
But thou contracted to thine own bright eyes,
Feed’st thy light’s flame with self-substantial fuel,
Making a famine where abundance lies,
Thyself thy foe, to thy sweet self too cruel:
Thou that art now the world’s fresh ornament,
And only herald to the gaudy spring,
Within thine own bud buriest thy content,
And, tender churl, mak’st waste in niggarding:
  Pity the world, or else this glutton be,
  To eat the world’s due, by the grave and thee.

                    2

When forty winters shall besiege thy brow,
And dig deep trenches in thy beauty’s field,
Thy youth’s proud livery so gazed on now,
Will be a tatter’d weed of small worth held:
  This were to be new made when thou art old,
  And see thy blood warm when thou feel’st it cold.

                    154

The little Love-god lying once asleep,
Laid by his side his heart-inflaming brand,
  Came there for cure and this by that I prove,
  Love’s fire heats water, water cools not love.




ALL’S WELL THAT ENDS WELL



Contents

ACT I
Scene I. Rossillion. A room in the Countess’s palace.
Scene II. Paris. A room in the King’s palace.
Scene III. Rossillion. A Room in the Palace.


ACT II
Scene I. Paris. A room in the King’s palace.
Scene II. Rossillion. A room in the Countess’s palace.


 Dramatis Personæ

KING OF FRANCE
THE DUKE OF FLORENCE
BERTRAM, Count of Rossillion
LAFEW, an old Lord
PAROLLES, a follower of Bertram
COUNTESS OF ROSSILLION, Mother to Bertram
HELENA, a Gentlewoman protected by the Countess
Lords, Officers, Soldiers, etc., French and Florentine.

SCENE: Partly in France, and partly in Tuscany.



ACT I

SCENE I. Rossillion. A room in the Countess’s palace.

 Enter Bertram, the Countess of Rossillion, Helena and Lafew, all in black.

COUNTESS.
In delivering my son from me, I bury a second husband.

BERTRAM.
And I in going, madam, weep o’er my father’s death anew; but I must
attend his majesty’s command, to whom I am now in ward, evermore in
subjection.

LAFEW.
You shall find of the King a husband, madam; you, sir, a father. He that
so generally is at all times good must of necessity hold his virtue to
you.

COUNTESS.
What hope is there of his majesty’s amendment?

 [_Exeunt._]



THE TRAGEDY OF CORIOLANUS



Contents

ACT I
Scene I. Rome. A street.
Scene II. Corioli. The Senate House.


Dramatis Personæ

CAIUS MARCIUS, afterwards CAIUS MARCIUS CORIOLANUS
MENENIUS AGRIPPA, Friend to Coriolanus
VOLUMNIA, Mother to Coriolanus
Citizens of Rome and of Antium

SCENE: Partly in Rome, and partly in the territories of the Volscians and Antiates.




ACT I

SCENE I. Rome. A street.


 Enter a company of mutinous Citizens, with staves, clubs, and other
 weapons.

FIRST CITIZEN.
Before we proceed any further, hear me speak.

ALL.
Speak, speak.

FIRST CITIZEN.
You are all resolved rather to die than to famish?

ALL.
Resolved, resolved.

SECOND CITIZEN.
One word, good citizens.



THE TRAGEDY OF HAMLET, PRINCE OF DENMARK



Contents

ACT I
Scene I. Elsinore. A platform before the Castle.
Scene II. Elsinore. A room of state in the Castle.


Dramatis Personæ

HAMLET, Prince of Denmark.
CLAUDIUS, King of Denmark, Hamlet’s uncle.
The GHOST of the late king, Hamlet’s father.
GERTRUDE, the Queen, Hamlet’s mother, now wife of Claudius.
HORATIO, Friend to Hamlet.
MARCELLUS, Officer.
BARNARDO, Officer.
FRANCISCO, a Soldier

SCENE. Elsinore.



ACT I

SCENE I. Elsinore. A platform before the Castle.

 Enter Francisco and Barnardo, two sentinels.

BARNARDO.
Who’s there?

FRANCISCO.
Nay, answer me. Stand and unfold yourself.

BARNARDO.
Long live the King!

FRANCISCO.
For this relief much thanks. ’Tis bitter cold,
And I am sick at heart.

 Enter Horatio and Marcellus.

HORATIO.
Friends to this ground.

MARCELLUS.
And liegemen to the Dane.

FRANCISCO.
Give you good night.

 [_Exit._]

BARNARDO.
Sit down awhile,
And let us once again assail your ears,
What we two nights have seen.

HORATIO.
                              Well, sit we down,
And let us hear Barnardo speak of this.

 Enter Ghost.

MARCELLUS.
Peace, break thee off. Look where it comes again.

SCENE II. Elsinore. A room of state in the Castle.

 Flourish. Enter Claudius, King of Denmark, Gertrude the Queen, Hamlet,
 Polonius, Laertes, Voltemand, Cornelius, Lords and Attendant.

KING.
Though yet of Hamlet our dear brother’s death
The memory be green,
But now, my cousin Hamlet, and my son—

HAMLET.
[_Aside._] A little more than kin, and less than kind.

KING.
How is it that the clouds still hang on you?

HAMLET.
Not so, my lord, I am too much i’ the sun.

 [_Exeunt all but Hamlet._]

HAMLET.
O that this too too solid flesh would melt,
Thaw, and resolve itself into a dew! [_Sighs._]



THE TRAGEDY OF ROMEO AND JULIET



Contents

THE PROLOGUE.

ACT I
Scene I. A public place.

ACT II
CHORUS.
Scene II. Capulet’s Garden.


Dramatis Personæ

ESCALUS, Prince of Verona.
ROMEO, son to Montague.
JULIET, daughter to Capulet.
SAMPSON, servant to Capulet.
GREGORY, servant to Capulet.
CHORUS.

SCENE. During the greater part of the Play in Verona; once, in the
Fifth Act, at Mantua.


THE PROLOGUE

 Enter Chorus.

CHORUS.
Two households, both alike in dignity,
In fair Verona, where we lay our scene,
From ancient grudge break to new mutiny,
Where civil blood makes civil hands unclean.

 [_Exit._]



ACT I

SCENE I. A public place.

 Enter Sampson and Gregory armed with swords and bucklers.

SAMPSON.
Gregory, on my word, we’ll not carry coals.

GREGORY.
No, for then we should be colliers.



ACT II

SCENE II. Capulet’s Garden.

 Enter Romeo.

ROMEO.
He jests at scars that never felt a wound.

 Juliet appears above at a window.

But soft, what light through yonder window breaks?
It is the east, and Juliet is the sun!

JULIET.
O Romeo, Romeo, wherefore art thou Romeo?



TWELFTH NIGHT; OR, WHAT YOU WILL



Contents

ACT I
Scene I. An Apartment in the Duke’s Palace.
Scene III. A Room in Olivia’s House.


Dramatis Personæ

ORSINO, Duke of Illyria.
CURIO, Gentleman attending on the Duke
SIR TOBY BELCH, Uncle of Olivia.
MARIA, Olivia’s Woman.
CLOWN, Servant to Olivia.
PRIEST
Lords, Sailors, Officers, Musicians, and other Attendants.

SCENE: A City in Illyria; and the Sea-coast near it.



ACT I.

SCENE I. An Apartment in the Duke’s Palace.

 Enter Orsino, Duke of Illyria, Curio, and other Lords; Musicians attending.

DUKE.
If music be the food of love, play on,
Give me excess of it; that, surfeiting,
The appetite may sicken and so die.

CURIO.
Will you go hunt, my lord?

DUKE.
What, Curio?

SCENE III. A Room in Olivia’s House.

 Enter Sir Toby and Maria.

SIR TOBY.
What a plague means my niece to take the death of her brother thus? I
am sure care’s an enemy to life.

MARIA.
By my troth, Sir Toby, you must come in earlier o’ nights.

CLOWN.
[_Sings._]
  O mistress mine, where are you roaming?
  O stay and hear, your true love’s coming,

 [_Exeunt._]



A LOVER’S COMPLAINT



From off a hill whose concave womb reworded
A plaintful story from a sister vale,
My spirits t’attend this double voice accorded,
And down I laid to list the sad-tun’d tale;




THE PASSIONATE PILGRIM

I.

Did not the heavenly rhetoric of thine eye,
’Gainst whom the world could not hold argument,
Persuade my heart to this false perjury?

II.

Two loves I have, of comfort and despair,
That like two spirits do suggest me still;




THE PHOENIX AND THE TURTLE



Let the bird of loudest lay,
On the sole Arabian tree,
Herald sad and trumpet be,
To whose sound chaste wings obey.

THRENOS.

Beauty, truth, and rarity,
Grace in all simplicity,
Here enclos’d in cinders lie.




THE RAPE OF LUCRECE

                              TO THE
                    RIGHT HONOURABLE HENRY WRIOTHESLEY,
                 EARL OF SOUTHAMPTON, AND BARON OF TITCHFIELD.

The love I dedicate to your lordship is without end; whereof this
pamphlet, without beginning, is but a superfluous moiety.

                                    Your lordship’s in all duty,
                                    WILLIAM SHAKESPEARE.

THE ARGUMENT.

Lucius Tarquinius (for his excessive pride surnamed Superbus), after he
had caused his own father-in-law, Servius Tullius, to be cruelly
murdered,

THE RAPE OF LUCRECE

From the besieged Ardea all in post,
Borne by the trustless wings of false desire,




VENUS AND ADONIS

_Vilia miretur vulgus; mihi flavus Apollo
Pocula Castalia plena ministret aqua._

TO THE RIGHT HONOURABLE
HENRY WRIOTHESLEY, EARL OF SOUTHAMPTON,
AND BARON OF TITCHFIELD.

Right Honourable, I know not how I shall offend in dedicating my
unpolished lines to your lordship.

                                  WILLIAM SHAKESPEARE.

Even as the sun with purple-colour’d face
Had ta’en his last leave of the weeping morn,
Rose-cheek’d Adonis hied him to the chase;




*** END OF THE PROJECT GUTENBERG EBOOK THE COMPLETE WORKS OF WILLIAM SHAKESPEARE ***
\x20\x20\x20\x20

\x20\x20\x20\x20
Updated editions will replace the previous one—the old editions will
be renamed.

Creating the works from print editions not protected by U.S. copyright
law means that no one owns a United States copyright in these works,
so the Foundation (and you!) can copy and distribute it in the United
States without permission and without paying copyright
royalties.

START: FULL LICENSE

THE FULL PROJECT GUTENBERG LICENSE

PLEASE READ THIS BEFORE YOU DISTRIBUTE OR USE THIS WORK

Section 1. General Terms of Use and Redistributing Project Gutenberg™
electronic works

1.A. By reading or using any part of this Project Gutenberg™
electronic work, you indicate that you have read, understand, agree to
and accept all the terms of this license and intellectual property
(trademark/copyright) agreement.

MICHAEL S. HART.
Professor Michael S. Hart was the originator of the Project
Gutenberg™ concept of a library of electronic works.
"""

PG100_EXPECTED = [
    ("ALL'S WELL THAT ENDS WELL", {
        "COUNTESS": ["In delivering my son from me, I bury a second husband.",
                     "What hope is there of his majesty's amendment?"],
        "BERTRAM": ["And I in going, madam, weep o'er my father's death anew; but I must",
                    "attend his majesty's command, to whom I am now in ward, evermore in", "subjection."],
        "LAFEW": ["You shall find of the King a husband, madam; you, sir, a father. He that",
                  "so generally is at all times good must of necessity hold his virtue to", "you."],
    }),
    ("THE TRAGEDY OF CORIOLANUS", {
        "FIRST CITIZEN": ["Before we proceed any further, hear me speak.",
                          "You are all resolved rather to die than to famish?"],
        "ALL": ["Speak, speak.", "Resolved, resolved."],
        "SECOND CITIZEN": ["One word, good citizens."],
    }),
    ("THE TRAGEDY OF HAMLET, PRINCE OF DENMARK", {
        "BARNARDO": ["Who's there?", "Long live the King!", "Sit down awhile,",
                     "And let us once again assail your ears,", "What we two nights have seen."],
        "FRANCISCO": ["Nay, answer me. Stand and unfold yourself.", "For this relief much thanks. 'Tis bitter cold,",
                      "And I am sick at heart.", "Give you good night."],
        "HORATIO": ["Friends to this ground.", "Well, sit we down,", "And let us hear Barnardo speak of this."],
        "MARCELLUS": ["And liegemen to the Dane.", "Peace, break thee off. Look where it comes again."],
        "KING": ["Though yet of Hamlet our dear brother's death", "The memory be green,",
                 "But now, my cousin Hamlet, and my son-", "How is it that the clouds still hang on you?"],
        "HAMLET": ["A little more than kin, and less than kind.", "Not so, my lord, I am too much i' the sun.",
                   "O that this too too solid flesh would melt,", "Thaw, and resolve itself into a dew!"],
    }),
    ("THE TRAGEDY OF ROMEO AND JULIET", {
        "CHORUS": ["Two households, both alike in dignity,", "In fair Verona, where we lay our scene,",
                   "From ancient grudge break to new mutiny,", "Where civil blood makes civil hands unclean."],
        "SAMPSON": ["Gregory, on my word, we'll not carry coals."],
        "GREGORY": ["No, for then we should be colliers."],
        "ROMEO": ["He jests at scars that never felt a wound.", "But soft, what light through yonder window breaks?",
                  "It is the east, and Juliet is the sun!"],
        "JULIET": ["O Romeo, Romeo, wherefore art thou Romeo?"],
    }),
    ("TWELFTH NIGHT; OR, WHAT YOU WILL", {
        "DUKE": ["If music be the food of love, play on,", "Give me excess of it; that, surfeiting,",
                 "The appetite may sicken and so die.", "What, Curio?"],
        "CURIO": ["Will you go hunt, my lord?"],
        "SIR TOBY": ["What a plague means my niece to take the death of her brother thus? I",
                     "am sure care's an enemy to life."],
        "MARIA": ["By my troth, Sir Toby, you must come in earlier o' nights."],
        "CLOWN": ["O mistress mine, where are you roaming?", "O stay and hear, your true love's coming,"],
    }),
]

LEAF_ERA_EXCERPT = """The Project Gutenberg EBook of The Complete Works of William Shakespeare, by
William Shakespeare

This eBook is for the use of anyone anywhere at no cost and with
almost no restrictions whatsoever.  You may copy it, give it away or
re-use it under the terms of the Project Gutenberg License included
with this eBook or online at www.gutenberg.org

** This is a COPYRIGHTED Project Gutenberg eBook, Details Below **
**     Please follow the copyright guidelines in this file.     **

Title: The Complete Works of William Shakespeare

Author: William Shakespeare

Posting Date: September 1, 2011 [EBook #100]
Release Date: January, 1994

Language: English


*** START OF THIS PROJECT GUTENBERG EBOOK COMPLETE WORKS--WILLIAM SHAKESPEARE ***




This is the 100th Etext file presented by Project Gutenberg, and
is presented in cooperation with World Library, Inc., from their
Library of the Future and Shakespeare CDROMS.  Project Gutenberg
often releases Etexts that are NOT placed in the Public Domain!!

<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC., AND IS
PROVIDED BY PROJECT GUTENBERG ETEXT OF ILLINOIS BENEDICTINE COLLEGE
WITH PERMISSION.>>




1609

THE SONNETS

by William Shakespeare



                     1
  From fairest creatures we desire increase,
  That thereby beauty's rose might never die,
  But as the riper should by time decease,
  His tender heir might bear his memory:
  Pity the world, or else this glutton be,
  To eat the world's due, by the grave and thee.


                     2
  When forty winters shall besiege thy brow,
  And dig deep trenches in thy beauty's field,
  Thy youth's proud livery so gazed on now,
  Will be a tattered weed of small worth held:


THE END



<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC., AND IS
PROVIDED BY PROJECT GUTENBERG ETEXT OF ILLINOIS BENEDICTINE COLLEGE
WITH PERMISSION.>>



1603

ALLS WELL THAT ENDS WELL

by William Shakespeare



Dramatis Personae

  KING OF FRANCE
  THE DUKE OF FLORENCE
  BERTRAM, Count of Rousillon
  LAFEU, an old lord
  COUNTESS OF ROUSILLON, mother to Bertram
  HELENA, a gentlewoman protected by the Countess

SCENE:
Rousillon; Paris; Florence; Marseilles



ACT I. SCENE 1.
Rousillon. The COUNT'S palace

Enter BERTRAM, the COUNTESS OF ROUSILLON, HELENA, and LAFEU, all in black

  COUNTESS. In delivering my son from me, I bury a second husband.
  BERTRAM. And I in going, madam, weep o'er my father's death anew;
    but I must attend his Majesty's command, to whom I am now in
    ward, evermore in subjection.
  LAFEU. You shall find of the King a husband, madam; you, sir, a
    father.
                                                           Exeunt



THE END



<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC., AND IS
PROVIDED BY PROJECT GUTENBERG ETEXT OF ILLINOIS BENEDICTINE COLLEGE
WITH PERMISSION.>>



1594

THE COMEDY OF ERRORS

by William Shakespeare



Dramatis Personae

SOLINUS, Duke of Ephesus
AEGEON, a merchant of Syracuse



<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC., AND IS
PROVIDED BY PROJECT GUTENBERG ETEXT OF ILLINOIS BENEDICTINE COLLEGE
WITH PERMISSION.>>



ACT I. SCENE I.
Ephesus. The DUKE'S palace

Enter the DUKE OF EPHESUS, AEGEON, the Merchant of Syracuse, GAOLER, OFFICERS, and other ATTENDANTS

AEGEON. Proceed, Solinus, to procure my fall,
And by the doom of death end woes and all.
DUKE. Merchant of Syracuse, plead no more;
I am not partial to infringe our laws.

<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC., AND IS
PROVIDED BY PROJECT GUTENBERG ETEXT OF ILLINOIS BENEDICTINE COLLEGE
WITH PERMISSION.>>



1601

THE TRAGEDY OF HAMLET, PRINCE OF DENMARK

by William Shakespeare



Dramatis Personae

  Claudius, King of Denmark.
  Hamlet, son to the former, and nephew to the present king.
  Francisco, a soldier.
  Bernardo, officer.

SCENE.- Elsinore.


ACT I. Scene I.
Elsinore. A platform before the Castle.

Enter two Sentinels-[first,] Francisco, [who paces up and down
at his post; then] Bernardo, [who approaches him].

  Ber. Who's there.?
  Fran. Nay, answer me. Stand and unfold yourself.
  Ber. Long live the King!
  Fran. For this relief much thanks. 'Tis bitter cold,
    And I am sick at heart.



THE END

End of the Project Gutenberg EBook of The Complete Works of William Shakespeare, by
William Shakespeare

*** END OF THIS PROJECT GUTENBERG EBOOK COMPLETE WORKS--WILLIAM SHAKESPEARE ***
"""

LEAF_ERA_EXPECTED = [
    ("ALLS WELL THAT ENDS WELL", {
        "COUNTESS": ["In delivering my son from me, I bury a second husband."],
        "BERTRAM": ["And I in going, madam, weep o'er my father's death anew;",
                    "but I must attend his Majesty's command, to whom I am now in", "ward, evermore in subjection."],
        # LEAF keeps the right-aligned "Exeunt" of a continuation line (CONT_RE: 4 spaces and anything)
        "LAFEU": ["You shall find of the King a husband, madam; you, sir, a", "father.", "Exeunt"],
    }),
    ("THE COMEDY OF ERRORS", {
        "AEGEON": ["Proceed, Solinus, to procure my fall,", "And by the doom of death end woes and all."],
        "DUKE": ["Merchant of Syracuse, plead no more;", "I am not partial to infringe our laws."],
    }),
    ("THE TRAGEDY OF HAMLET, PRINCE OF DENMARK", {
        "BER": ["Who's there.?", "Long live the King!"],
        "FRAN": ["Nay, answer me. Stand and unfold yourself.", "For this relief much thanks. 'Tis bitter cold,",
                 "And I am sick at heart."],
    }),
]
